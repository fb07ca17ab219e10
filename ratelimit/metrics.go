package ratelimit

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	decisions      *prometheus.CounterVec
	allowedRedis   prometheus.Counter
	limitedRedis   prometheus.Counter
	allowedLocal   prometheus.Counter
	limitedLocal   prometheus.Counter
	fallbackActive prometheus.Gauge
	fallbacks      prometheus.Counter
	redisErrors    *prometheus.CounterVec
	errTimeout     prometheus.Counter
	errOther       prometheus.Counter
	batchSize      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "attestd_ratelimit_decisions_total",
			Help: "Rate-limit decisions by result (allowed, limited) and source (redis: the shared window; local: this node's fallback window).",
		}, []string{"result", "source"}),
		fallbackActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "attestd_ratelimit_fallback_active",
			Help: "1 while Redis is unavailable and this node limits with its own in-memory window.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "attestd_ratelimit_fallbacks_total",
			Help: "Times this node switched to its in-memory window because Redis was unavailable.",
		}),
		redisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "attestd_ratelimit_redis_errors_total",
			Help: "Failed rate-limit round trips to Redis, by kind (timeout, error).",
		}, []string{"kind"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "attestd_ratelimit_batch_size",
			Help:    "Rate-limit decisions sent to Redis in one pipelined round trip.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
	}
	m.decisions, m.fallbackActive, m.fallbacks = metric.Register(reg, m.decisions), metric.Register(reg, m.fallbackActive), metric.Register(reg, m.fallbacks)
	m.redisErrors, m.batchSize = metric.Register(reg, m.redisErrors), metric.Register(reg, m.batchSize)
	m.allowedRedis = m.decisions.WithLabelValues("allowed", "redis")
	m.limitedRedis = m.decisions.WithLabelValues("limited", "redis")
	m.allowedLocal = m.decisions.WithLabelValues("allowed", "local")
	m.limitedLocal = m.decisions.WithLabelValues("limited", "local")
	m.errTimeout = m.redisErrors.WithLabelValues("timeout")
	m.errOther = m.redisErrors.WithLabelValues("error")
	return m
}

func (m *metrics) count(d Decision) {
	switch {
	case d.Allowed && !d.Local:
		m.allowedRedis.Inc()
	case !d.Allowed && !d.Local:
		m.limitedRedis.Inc()
	case d.Allowed:
		m.allowedLocal.Inc()
	default:
		m.limitedLocal.Inc()
	}
}
