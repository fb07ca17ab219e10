package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MetricSum sums the samples of the counter or gauge name in reg whose
// labels include the given ones (name, value, name, value, ...).
func MetricSum(tb testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	Must(tb, err, "gather metrics")
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// hasLabels reports whether m carries every name=value pair of labels.
func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}
