package benchkit

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, tc := range []struct {
		name string
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 3, 2, 4), 50, 3 * time.Millisecond},
		{"max", ms(5, 1, 3), 100, 5 * time.Millisecond},
		{"p0 is the min", ms(5, 1, 3), 0, time.Millisecond},
		{"p90 of ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.d...)
			if got := Percentile(tc.d, tc.p); got != tc.want {
				t.Fatalf("Percentile(%v, %v) = %v, want %v", tc.d, tc.p, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.d[i] {
					t.Fatal("Percentile reordered its input")
				}
			}
		})
	}
}

func TestLoadAvg(t *testing.T) {
	if f := strings.Fields(LoadAvg()); len(f) != 3 && LoadAvg() != "?" {
		t.Fatalf("LoadAvg() = %q", LoadAvg())
	}
}
