package stream

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	open    prometheus.Gauge
	sent    prometheus.Counter
	dropped prometheus.Counter
	refused *prometheus.CounterVec
	ended   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, b *budget) *metrics {
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_stream_open",
			Help: "Live streams (GET /attestations/stream) open on this node."}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_stream_events_sent_total",
			Help: "Events (attestation, commitment, removed) written to live streams."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_stream_dropped_slow_total",
			Help: "Streams dropped because their client did not take a write within ATTESTD_STREAM_WRITE_TIMEOUT."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_stream_refused_total",
			Help: "Streams refused by a cap: per_ip (429), node (503)."}, []string{"cap"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_stream_ended_total",
			Help: "Streams ended, by why: client (went away), lifetime, drain, slow, budget (the node's stream buffer budget was full: blocked on a client that took nothing, or a STREAM_BUFFER_FULL error event), error (another error event)."}, []string{"why"}),
	}
	metric.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attestd_stream_buffered_bytes",
		Help: "Bytes this node's live streams hold for their clients: write buffers and catch-up rows (at most ATTESTD_STREAM_BUFFER_TOTAL_MB)."},
		func() float64 { return float64(b.Held()) }))
	m.open, m.sent, m.dropped = metric.Register(reg, m.open), metric.Register(reg, m.sent), metric.Register(reg, m.dropped)
	m.refused, m.ended = metric.Register(reg, m.refused), metric.Register(reg, m.ended)
	return m
}
