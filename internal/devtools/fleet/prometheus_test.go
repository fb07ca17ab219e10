package fleet

import "testing"

func TestScaleRuleTimes(t *testing.T) {
	in := `      - alert: A
        expr: changes(x[2m]) == 0 and rate(y[5m]) > 0 and z[30s]
        for: 1m
      - alert: B
        expr: up == 0
        for: 10m
      - record: r
        expr: sum(rate(c[1h]))
`
	for _, c := range []struct {
		scale int
		want  string
	}{
		{1, in},
		{12, `      - alert: A
        expr: changes(x[10s]) == 0 and rate(y[25s]) > 0 and z[3s]
        for: 5s
      - alert: B
        expr: up == 0
        for: 50s
      - record: r
        expr: sum(rate(c[300s]))
`},
		{1000, `      - alert: A
        expr: changes(x[1s]) == 0 and rate(y[1s]) > 0 and z[1s]
        for: 1s
      - alert: B
        expr: up == 0
        for: 1s
      - record: r
        expr: sum(rate(c[4s]))
`},
	} {
		if got := string(ScaleRuleTimes([]byte(in), c.scale)); got != c.want {
			t.Errorf("scale %d:\n%s\nwant\n%s", c.scale, got, c.want)
		}
	}
}
