package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// OpenStore connects to Postgres (writes, and the indexer, always use
// DATABASE_URL; replicas, when given, serve reads that can use them).
func OpenStore(ctx context.Context, cfg config.Config, lazy bool, replicas ...store.ReplicaOptions) (*store.Store, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL not set (make run starts a local server for you)")
	}
	opt := store.Options{MaxConns: cfg.DBMaxConns, Lazy: lazy}
	if len(replicas) > 0 {
		opt.Replicas = replicas[0]
	}
	return store.Open(ctx, cfg.DatabaseURL, opt)
}

// OpenRedis makes a client with explicit timeouts (go-redis defaults moved
// in v9.22): a Redis Cluster client when ATTESTD_REDIS_CLUSTER is on. It
// refuses a server whose mode contradicts the setting (see checkRedisMode).
func OpenRedis(ctx context.Context, cfg config.Config) (redis.UniversalClient, error) {
	rdb, err := newRedisClient(cfg)
	if err != nil {
		return nil, err
	}
	tracing.InstrumentRedis(rdb) // a span per command, when tracing is on
	if err := checkRedisMode(ctx, rdb, cfg.RedisCluster); err != nil {
		rdb.Close()
		return nil, err
	}
	return rdb, nil
}

var errNotCluster = errors.New("REDIS_URL is a standalone Redis but ATTESTD_REDIS_CLUSTER=on: set it to off, or point REDIS_URL at cluster nodes")

// checkRedisMode fails when the server's cluster mode contradicts
// ATTESTD_REDIS_CLUSTER. A plain client on one cluster master would get
// MOVED for most keys: cache misses on every node and a per-node limit
// instead of a fleet-wide one. A server that does not answer is not an
// error here: nodes start while Redis is down and serve from Postgres.
func checkRedisMode(ctx context.Context, rdb redis.UniversalClient, cluster bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var info string
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		// Ask a seed node itself: the cluster client cannot route
		// anything before it has read the slots.
		err = cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			v, err := c.Info(ctx, "cluster").Result()
			if err == nil && info == "" {
				info = v
			}
			return err
		})
	} else {
		info, err = rdb.Info(ctx, "cluster").Result()
	}
	if err != nil {
		if cluster && strings.Contains(err.Error(), "cluster support disabled") {
			return errNotCluster
		}
		return nil
	}
	enabled := strings.Contains(info, "cluster_enabled:1")
	switch {
	case enabled && !cluster:
		return errors.New("REDIS_URL is a Redis Cluster node: set ATTESTD_REDIS_CLUSTER=on (and list more seed nodes as addr=host:port parameters)")
	case !enabled && cluster:
		return errNotCluster
	}
	return nil
}

// newRedisClient builds the client ATTESTD_REDIS_CLUSTER asks for.
func newRedisClient(cfg config.Config) (redis.UniversalClient, error) {
	if cfg.RedisURL == "" {
		return nil, errors.New("REDIS_URL not set (make run starts a local server for you)")
	}
	const (
		dial, rw = 2 * time.Second, time.Second
		pool     = 128 // per server
		idle     = 8
		maxRetry = 1
	)
	if cfg.RedisCluster {
		opt, err := redis.ParseClusterURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("parse REDIS_URL as cluster seeds (ATTESTD_REDIS_CLUSTER=on): %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dial, rw, rw
		opt.PoolSize, opt.MinIdleConns, opt.MaxRetries = pool, idle, maxRetry
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dial, rw, rw
	opt.PoolSize, opt.MinIdleConns, opt.MaxRetries = pool, idle, maxRetry
	return redis.NewClient(opt), nil
}

// cacheRole is what a process does with the cache: an API node reads
// through it; a writer (the indexer, seed) moves its epoch, bumped (nil:
// nobody) hearing each move.
type cacheRole struct {
	reads  bool
	bumped func(uint64)
}

// openCache starts the cache over rdb, wired as the store's notifier.
func openCache(ctx context.Context, cfg config.Config, rdb redis.UniversalClient, st *store.Store, reg prometheus.Registerer, log *slog.Logger, role cacheRole) (*cache.Cache, error) {
	own := false
	if cfg.CacheRedisURL != "" {
		// The cache's own Redis (ATTESTD_CACHE_REDIS_URL): a full cache
		// evicts cache entries there, never limits, sessions, queues or
		// payment claims.
		ccfg := cfg
		ccfg.RedisURL = cfg.CacheRedisURL
		var err error
		if rdb, err = OpenRedis(ctx, ccfg); err != nil {
			return nil, fmt.Errorf("ATTESTD_CACHE_REDIS_URL: %w", err)
		}
		own = true
	}
	c, err := cache.New(ctx, rdb, cache.Options{
		Prefix: cfg.RedisPrefix, LocalBytes: cfg.LocalBytes, Disabled: cfg.CacheDisabled, MaxBytes: cfg.CacheMaxBytes,
		Logger: log, Registerer: reg, SkipSubscriber: !role.reads, Bumped: role.bumped, CloseRedis: own,
	})
	if err != nil {
		if own {
			rdb.Close()
		}
		return nil, err
	}
	st.SetNotifier(c)
	return c, nil
}

// OpenWriterCache is openCache for a process that writes the index (the
// indexer, seed): when ATTESTD_PURGE_URL is set, each epoch it moves the
// index to also purges the CDN (once per change, from this one process,
// never from the serving nodes). close stops both, sending a purge still
// pending.
func OpenWriterCache(ctx context.Context, cfg config.Config, pcfg purge.Config, rdb redis.UniversalClient, st *store.Store, reg prometheus.Registerer, log *slog.Logger) (closeAll func(), err error) {
	var p *purge.Purger
	var bumped func(uint64)
	if pcfg.Enabled() {
		pcfg.Logger, pcfg.Registerer = log, reg
		if p, err = purge.New(pcfg); err != nil {
			return nil, err
		}
		bumped = p.Epoch
		log.Info("edge purge hook on", "keys", strings.Join(httpcache.EpochKeys, " "), "timeout", pcfg.Timeout.String())
	}
	c, err := openCache(ctx, cfg, rdb, st, reg, log, cacheRole{bumped: bumped})
	if err != nil {
		if p != nil {
			p.Close()
		}
		return nil, err
	}
	return func() {
		c.Close()
		if p != nil {
			p.Close()
		}
	}, nil
}

// NewRegistry is a Prometheus registry with process and Go collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	metric.Register(reg, collectors.NewGoCollector())
	metric.Register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// RequireSchema refuses to start a long-running process (serve, index,
// worker) on a database whose schema is not the one this binary embeds:
// behind, it says to run `attestd migrate`; ahead (a newer binary
// migrated it), it says so. A database that does not answer is left to
// the process (a node serves cached reads while Postgres is down).
func RequireSchema(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if cfg.DatabaseURL == "" {
		return nil // the process names the missing variable itself
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 1})
	if err != nil {
		log.Warn("cannot check the database schema: postgres does not answer", "err", err)
		return nil
	}
	defer st.Close()
	s, err := st.CheckSchema(ctx)
	if err != nil {
		log.Warn("cannot check the database schema", "err", err)
		return nil
	}
	return s.Err()
}
