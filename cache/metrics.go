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
	writes      [classes][outcomes]prometheus.Counter
}

// Outcomes of a write to Redis (attestd_cache_redis_writes_total).
const (
	outcomeStored   = iota // kept
	outcomeDeferred        // first miss: a marker only
	outcomeRefused         // the class's budget is spent, or Redis is out of memory
	outcomes
)

var outcomeNames = [outcomes]string{outcomeStored: "stored", outcomeDeferred: "deferred", outcomeRefused: "refused"}

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
	writes := metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_cache_redis_writes_total",
		Help: "Cache entries offered to Redis, by class (short, long) and outcome: stored; deferred (a first miss leaves a marker, the second stores); refused (the class's budget is spent, or Redis is out of memory)."},
		[]string{"class", "outcome"}))
	for cls := range classes {
		for o := range outcomes {
			m.writes[cls][o] = writes.WithLabelValues(classNames[cls], outcomeNames[o])
		}
	}
	return m
}

// budgetCollector reports the budget when scraped: each class's share,
// what it holds (as last read, every PollInterval) and whether it is full.
type budgetCollector struct{ b *budget }

var (
	budgetDesc = prometheus.NewDesc("attestd_cache_redis_budget_bytes",
		"Bytes each class of cache entries may hold in Redis (ATTESTD_CACHE_MAX_MB; 0: unbounded).", []string{"class"}, nil)
	heldDesc = prometheus.NewDesc("attestd_cache_redis_bytes",
		"Bytes each class of cache entries holds in Redis, as counted against its budget (an overestimate by one window at most).", []string{"class"}, nil)
	fullDesc = prometheus.NewDesc("attestd_cache_full",
		"1 while a class of cache entries refuses writes to Redis (its budget spent, or Redis out of memory); answers are still served.", []string{"class"}, nil)
)

func (bc budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- budgetDesc
	ch <- heldDesc
	ch <- fullDesc
}

func (bc budgetCollector) Collect(ch chan<- prometheus.Metric) {
	for cls := range classes {
		name := classNames[cls]
		full := 0.0
		if bc.b.isFull(cls) {
			full = 1
		}
		ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, float64(bc.b.limit[cls]), name)
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(bc.b.heldNow(cls)), name)
		ch <- prometheus.MustNewConstMetric(fullDesc, prometheus.GaugeValue, full, name)
	}
}
