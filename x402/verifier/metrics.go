package verifier

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	paid    *prometheus.CounterVec
	refused *prometheus.CounterVec
	// refusedMissing is refused{reason="payment_required"}, the most
	// frequent answer of all, looked up once.
	refusedMissing prometheus.Counter
	settled        *prometheus.CounterVec
	settledUnits   prometheus.Counter
	failed         *prometheus.CounterVec
	released       prometheus.Counter
	replayRedis    prometheus.Counter
	local          prometheus.Histogram
	settle         prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		paid: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_paid_total",
			Help: "Premium requests admitted with a verified payment, by route."}, []string{"route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_refused_total",
			Help: "Payable requests answered without content, by reason (payment_required: no payment sent)."}, []string{"reason"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_settled_total",
			Help: "Payments settled on chain, by route."}, []string{"route"}),
		settledUnits: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_settled_atomic_units_total",
			Help: "Sum of settled payments, in atomic units of the asset."}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_settle_failed_total",
			Help: "Settlements that failed (the content was not released), by reason."}, []string{"reason"}),
		released: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_released_total",
			Help: "Verified payments given back unsettled because the handler answered an error."}),
		replayRedis: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_replay_guard_errors_total",
			Help: "Replay claims Redis did not answer (the ledger's unique key decided alone)."}),
		local: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_x402_local_verify_seconds",
			Help:    "Time to decode and check a payment in process (no network).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 200e-6, 400e-6, 1e-3, 5e-3}}),
		settle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_x402_settle_seconds",
			Help:    "Time to settle a payment (send and confirm, or the facilitator's /settle).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
	}
	m.paid, m.refused, m.settled = metric.Register(reg, m.paid), metric.Register(reg, m.refused), metric.Register(reg, m.settled)
	m.settledUnits, m.failed = metric.Register(reg, m.settledUnits), metric.Register(reg, m.failed)
	m.released, m.replayRedis = metric.Register(reg, m.released), metric.Register(reg, m.replayRedis)
	m.local, m.settle = metric.Register(reg, m.local), metric.Register(reg, m.settle)
	m.refusedMissing = m.refused.WithLabelValues(ReasonMissing)
	return m
}
