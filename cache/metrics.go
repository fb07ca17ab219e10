package cache

import (
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	hits        *prometheus.CounterVec
	hitsLocal   prometheus.Counter
	hitsRedis   prometheus.Counter
	misses      prometheus.Counter
	redisErrors prometheus.Counter
	bumps       prometheus.Counter
	degraded    prometheus.Gauge
	epoch       prometheus.Gauge
	loadSeconds prometheus.Histogram
	localBytes  func() float64
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_cache_hits_total",
			Help: "Cache hits by layer (local, redis)."}, []string{"layer"}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_cache_misses_total",
			Help: "Cache misses that loaded from Postgres."}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_cache_redis_errors_total",
			Help: "Redis errors seen by the cache."}),
		bumps: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_cache_epoch_bumps_total",
			Help: "Index epoch bumps made by this process."}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_cache_redis_down",
			Help: "1 while Redis is unreachable and reads go to Postgres."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_cache_epoch",
			Help: "This node's view of the index epoch."}),
		loadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_cache_load_seconds",
			Help: "Duration of Postgres loads behind cache misses.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
	}
	m.hits, m.misses, m.redisErrors = metric.Register(reg, m.hits), metric.Register(reg, m.misses), metric.Register(reg, m.redisErrors)
	m.bumps, m.degraded, m.epoch = metric.Register(reg, m.bumps), metric.Register(reg, m.degraded), metric.Register(reg, m.epoch)
	m.loadSeconds = metric.Register(reg, m.loadSeconds)
	metric.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attestd_cache_local_bytes",
		Help: "Approximate bytes held by this node's in-process cache."}, func() float64 {
		if m.localBytes == nil {
			return 0
		}
		return m.localBytes()
	}))
	m.hitsLocal, m.hitsRedis = m.hits.WithLabelValues("local"), m.hits.WithLabelValues("redis")
	return m
}
