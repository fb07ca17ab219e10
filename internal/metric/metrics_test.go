package metric

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	a := Register(reg, prometheus.NewCounter(opts))
	b := Register(reg, prometheus.NewCounter(opts))
	if a != b {
		t.Fatal("a second identical collector must resolve to the first")
	}
	b.Inc()
	if got := counterValue(t, reg); got != 1 {
		t.Fatalf("x_total = %v, want 1", got)
	}
	if c := Register[prometheus.Counter](nil, prometheus.NewCounter(opts)); c == nil {
		t.Fatal("nil registerer must return the collector")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a conflicting collector must panic")
		}
	}()
	Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"}))
}

func counterValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v %d", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}
