package webhook

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deliveries     *prometheus.CounterVec
	deferred       *prometheus.CounterVec
	verifications  *prometheus.CounterVec
	relayed        prometheus.Counter
	fannedOut      prometheus.Counter
	claimed        prometheus.Counter
	restored       prometheus.Counter
	recovered      prometheus.Counter
	deactivated    prometheus.Counter
	dataLoss       prometheus.Counter
	pruned         prometheus.Counter
	attemptSeconds prometheus.Histogram
	lag            prometheus.Histogram
	queueDepth     *prometheus.GaugeVec
	retriesDue     *prometheus.GaugeVec
	retriesWaiting *prometheus.GaugeVec
	parked         *prometheus.GaugeVec
	eventBacklog   prometheus.Gauge
	outboxBacklog  prometheus.Gauge
	outboxLag      prometheus.Gauge
	breakersOpen   prometheus.Gauge
	inflight       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "attestd", "webhook"
	c := func(name, help string) prometheus.Counter {
		return metric.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}))
	}
	g := func(name, help string) prometheus.Gauge {
		return metric.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}))
	}
	gp := func(name, help string) *prometheus.GaugeVec {
		return metric.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help},
			[]string{"partition"}))
	}
	return &metrics{
		deliveries: metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "deliveries_total", Help: "Job outcomes by result: succeeded, retrying (failed, retry scheduled), failed (no retry left), deferred (put off without an attempt), dropped (webhook deleted or deactivated, delivery settled elsewhere)."},
			[]string{"result"})),
		deferred: metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "deferrals_total", Help: "Jobs put off without an attempt, by reason: circuit_open (parked until the receiver answers again), throttled (held until its turn at the webhook's own rate, once per turn; or over the server's per-webhook rate), host_rate (held in the retry set until its turn at the destination host's cap, once per turn), busy (the endpoint's backlog in this worker is full), error."},
			[]string{"reason"})),
		verifications: metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "verifications_total", Help: "Endpoint verification attempts by result: verified, unverified (answered without the challenge, or no attempt left), retrying (no answer), postponed (to its turn at the host's cap; no request sent)."},
			[]string{"result"})),
		relayed:     c("events_relayed_total", "Outbox events published to the event stream."),
		fannedOut:   c("deliveries_queued_total", "Delivery jobs queued by the fan-out."),
		claimed:     c("jobs_taken_over_total", "Jobs taken over from workers that stopped holding them."),
		recovered:   c("deliveries_recovered_total", "Deliveries queued again by a recovery (POST /webhooks/:id/recover)."),
		restored:    c("jobs_restored_total", "Pending deliveries queued again because the queue had lost their job."),
		deactivated: c("webhooks_deactivated_total", "Webhooks deactivated after failing too long or answering 410."),
		dataLoss:    c("queue_data_loss_total", "Times the worker found the Redis queue had lost its data and replayed from PostgreSQL."),
		pruned:      c("log_rows_pruned_total", "Outbox, delivery and attempt rows pruned after the retention."),
		attemptSeconds: metric.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "attempt_duration_seconds", Help: "Duration of delivery attempts.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}})),
		lag: metric.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "delivery_lag_seconds", Help: "From an event's creation to its successful delivery.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300, 3600, 6 * 3600, 36 * 3600}})),
		queueDepth:     gp("queue_depth", "Job messages on a partition's stream (waiting or being sent)."),
		retriesDue:     gp("retries_due", "Retries whose time has come, not yet moved to the stream."),
		retriesWaiting: gp("retries_scheduled", "Retries and put-off jobs waiting in a partition's retry set."),
		parked:         gp("webhooks_parked", "Webhooks whose jobs are parked because their receiver keeps failing (probed now and then)."),
		eventBacklog:   g("event_stream_length", "Events on the event stream not yet fanned out."),
		outboxBacklog:  g("outbox_pending", "Outbox events not yet fanned out."),
		outboxLag:      g("outbox_lag_seconds", "Age of the oldest outbox event not yet fanned out (0 when none)."),
		breakersOpen:   g("circuits_open", "Endpoints whose circuit is open in this worker."),
		inflight:       g("jobs_held", "Jobs this worker holds (being sent or waiting in an endpoint's backlog)."),
	}
}
