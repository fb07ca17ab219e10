package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/pubsub"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

// ErrNotFound is returned (and cached, per epoch) when a loader reports
// that the record does not exist.
var ErrNotFound = errors.New("not found")

// Options configure a Cache.
type Options struct {
	Prefix       string        // key prefix in Redis, e.g. "attestd:"
	LocalBytes   int           // in-process budget per kind (immutable, indexed); default 32 MiB; -1 disables the local layer
	ImmutableTTL time.Duration // default 24 h
	IndexedTTL   time.Duration // bound on time-dependent fields (last24h); default 30 s
	LoadTimeout  time.Duration // Postgres load deadline; default 5 s
	RedisTimeout time.Duration // per Redis call; default 200 ms
	PollInterval time.Duration // epoch poll backing pub/sub; default 1 s
	Disabled     bool          // bypass both layers (benchmarks of uncached reads)
	// MaxBytes bounds what the cache keeps in Redis, shared by every node
	// (see budget.go); default DefaultMaxBytes, -1 unbounded (a Redis of
	// the cache's own that evicts).
	MaxBytes       int64
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	SkipSubscriber bool // writers that never read (seed, the indexer) need no subscription or epoch polling
	// CloseRedis: Close closes the Redis client too (the cache's own).
	CloseRedis bool
	// Bumped, when set, hears every epoch this process moved the index to
	// (after the bump reached Redis, retries included). It must not block:
	// the edge purge hook queues its call there.
	Bumped func(epoch uint64)
}

// generation is the epoch a node is at and the in-process layer of values
// indexed at that epoch. They change together, so a read never pairs an
// epoch with another epoch's values.
type generation struct {
	epoch uint64
	local *local
}

// Cache is safe for concurrent use. Close stops its goroutines.
type Cache struct {
	rdb       redis.UniversalClient
	opt       Options
	log       *slog.Logger
	gen       atomic.Pointer[generation]
	redisDown atomic.Bool
	pending   atomic.Uint64 // floor+1 of a bump that failed and must be retried; 0: none
	immutable *local
	sf        singleflight.Group
	m         *metrics
	budget    *budget
	stop      context.CancelFunc
	wg        sync.WaitGroup
	listener  *pubsub.Listener
}

// New creates a cache over rdb and starts its epoch subscriber and poller.
func New(ctx context.Context, rdb redis.UniversalClient, opt Options) (*Cache, error) {
	if opt.LocalBytes == 0 {
		opt.LocalBytes = 32 << 20
	}
	if opt.ImmutableTTL <= 0 {
		opt.ImmutableTTL = 24 * time.Hour
	}
	if opt.IndexedTTL <= 0 {
		opt.IndexedTTL = 30 * time.Second
	}
	if opt.LoadTimeout <= 0 {
		opt.LoadTimeout = 5 * time.Second
	}
	if opt.RedisTimeout <= 0 {
		opt.RedisTimeout = 200 * time.Millisecond
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = time.Second
	}
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	c := &Cache{rdb: rdb, opt: opt, log: opt.Logger, immutable: newLocal(opt.LocalBytes), m: newMetrics(opt.Registerer),
		budget: newBudget(rdb, opt)}
	metric.Register(opt.Registerer, prometheus.Collector(budgetCollector{c.budget}))
	if c.log == nil {
		c.log = slog.Default()
	}
	c.gen.Store(&generation{local: newLocal(opt.LocalBytes)})
	c.m.localBytes = func() float64 { return float64(c.immutable.size() + c.gen.Load().local.size()) }
	if err := c.syncEpoch(ctx); err != nil {
		c.markDown(err)
	}
	bg, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if !opt.SkipSubscriber {
		c.listener = pubsub.Listen(rdb, c.epochKey(), pubsub.Handlers{
			// (Re)subscribed: we may have missed announcements meanwhile.
			Resync: func(ctx context.Context) {
				if err := c.syncEpoch(ctx); err == nil {
					c.markUp()
				}
			},
			Message: func(payload string) {
				if v, err := strconv.ParseUint(payload, 10, 64); err == nil {
					c.setEpoch(v)
				}
			},
		})
	}
	// Writers without a subscription poll too: a bump that failed (Redis
	// down or restarting) is retried until it succeeds, or nodes would
	// keep the old epoch until the next write.
	c.wg.Add(1)
	go c.poll(bg)
	return c, nil
}

// Close stops the background goroutines.
func (c *Cache) Close() {
	c.stop()
	if c.listener != nil {
		c.listener.Close()
	}
	c.wg.Wait()
	if c.opt.CloseRedis {
		c.rdb.Close()
	}
}

func (c *Cache) epochKey() string { return c.opt.Prefix + "epoch" }

// Epoch is this node's view of the index epoch.
func (c *Cache) Epoch() uint64 { return c.gen.Load().epoch }

// Degraded reports whether Redis is currently unreachable.
func (c *Cache) Degraded() bool { return c.redisDown.Load() }

func (c *Cache) redisCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.opt.RedisTimeout)
}

func (c *Cache) markDown(err error) {
	c.m.redisErrors.Inc()
	if c.redisDown.CompareAndSwap(false, true) {
		c.log.Warn("redis unreachable: serving from postgres, local epoch caches dropped", "err", err)
		for {
			cur := c.gen.Load()
			if c.gen.CompareAndSwap(cur, &generation{epoch: cur.epoch, local: newLocal(c.opt.LocalBytes)}) {
				break
			}
		}
		c.m.degraded.Set(1)
	}
}

func (c *Cache) markUp() {
	if c.redisDown.CompareAndSwap(true, false) {
		c.log.Info("redis reachable again")
		c.m.degraded.Set(0)
	}
}

// setEpoch moves this node to epoch e if it is newer, with an empty local
// layer for it.
func (c *Cache) setEpoch(e uint64) {
	for {
		cur := c.gen.Load()
		if e <= cur.epoch {
			return
		}
		if c.gen.CompareAndSwap(cur, &generation{epoch: e, local: newLocal(c.opt.LocalBytes)}) {
			c.m.epoch.Set(float64(e))
			return
		}
	}
}

func (c *Cache) syncEpoch(ctx context.Context) error {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	v, err := c.rdb.Get(rctx, c.epochKey()).Uint64()
	if errors.Is(err, redis.Nil) {
		v, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("read epoch: %w", err)
	}
	c.setEpoch(v)
	return nil
}

// bumpLua moves the epoch to at least floor and past its current value,
// and returns it. Epochs only grow, and floor (the commit's WAL position)
// lets them grow past what a restarted or flushed Redis forgot: nodes
// ignore announcements of epochs older than their own.
var bumpLua = redis.NewScript(`
local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
local floor = tonumber(ARGV[1])
if floor > v then v = floor end
redis.call('SET', KEYS[1], string.format('%d', v))
return v
`)

// BumpEpoch announces that indexed data changed; it implements
// store.Notifier. floor is a value the new epoch must reach (the commit's
// WAL position; 0 for none), so that epochs keep growing across a Redis
// restart or flush. A failed bump is retried by the poller until it
// succeeds.
func (c *Cache) BumpEpoch(ctx context.Context, floor uint64) error {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	v, err := bumpLua.Run(rctx, c.rdb, []string{c.epochKey()}, strconv.FormatUint(floor, 10)).Uint64()
	if err == nil {
		err = c.rdb.Publish(rctx, c.epochKey(), strconv.FormatUint(v, 10)).Err()
	}
	if err != nil {
		for {
			p := c.pending.Load()
			if p > floor || c.pending.CompareAndSwap(p, floor+1) {
				break
			}
		}
		c.markDown(err)
		return fmt.Errorf("bump cache epoch: %w", err)
	}
	c.pending.Store(0)
	c.setEpoch(v)
	c.m.bumps.Inc()
	if c.opt.Bumped != nil {
		c.opt.Bumped(v)
	}
	return nil
}

func (c *Cache) poll(ctx context.Context) {
	defer c.wg.Done()
	t := time.NewTicker(c.opt.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p := c.pending.Load(); p > 0 {
			if err := c.BumpEpoch(ctx, p-1); err != nil {
				continue
			}
		}
		if c.opt.SkipSubscriber {
			continue
		}
		if err := c.syncEpoch(ctx); err != nil {
			c.markDown(err)
			continue
		}
		c.markUp()
		c.refreshBudget(ctx)
	}
}

// refreshBudget reads what every node stored in the live windows.
func (c *Cache) refreshBudget(ctx context.Context) {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	if err := c.budget.refresh(rctx); err != nil {
		c.log.Debug("cache budget not read", "err", err)
	}
}
