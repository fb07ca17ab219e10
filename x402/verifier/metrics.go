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
	releaseRetries *prometheus.CounterVec
	replayRedis    prometheus.Counter
	replays        *prometheus.CounterVec
	kept           prometheus.Counter
	pruned         prometheus.Counter
	prunedBytes    prometheus.Counter
	storeBytes     prometheus.Gauge
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
		releaseRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_release_retries_total",
			Help: "Releases of unsettled payments that failed at first and were retried in the background, by outcome (released, abandoned: left to the reconciler)."}, []string{"outcome"}),
		replayRedis: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_replay_guard_errors_total",
			Help: "Replay claims Redis did not answer (the ledger's unique key decided alone)."}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_x402_replays_total",
			Help: "Settled payments presented again and given the answer they bought (kept bytes, no charge, no handler run), by route."}, []string{"route"}),
		kept: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_answers_kept_total",
			Help: "Paid answers kept for their payment presented again."}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_answers_pruned_total",
			Help: "Kept answers deleted after their retention (ATTESTD_X402_ANSWER_RETENTION)."}),
		prunedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_answers_pruned_bytes_total",
			Help: "Stored (compressed) bytes of the kept answers deleted after their retention."}),
		storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_x402_answer_store_bytes",
			Help: "Stored (compressed) bytes all kept answers hold, fleet-wide, as of this node's last prune pass (cap: ATTESTD_X402_ANSWER_STORE_MB)."}),
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
	m.releaseRetries = metric.Register(reg, m.releaseRetries)
	m.local, m.settle = metric.Register(reg, m.local), metric.Register(reg, m.settle)
	m.replays, m.kept = metric.Register(reg, m.replays), metric.Register(reg, m.kept)
	m.pruned, m.prunedBytes, m.storeBytes = metric.Register(reg, m.pruned), metric.Register(reg, m.prunedBytes), metric.Register(reg, m.storeBytes)
	m.refusedMissing = m.refused.WithLabelValues(ReasonMissing)
	return m
}
