package apikey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/metric"

	"github.com/attestd/attestd/internal/pubsub"

	"github.com/attestd/attestd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

// Defaults and bounds of Config and Deps.
const (
	DefaultCacheTTL      = 4 * time.Second
	MaxCacheTTL          = 5 * time.Second // the revocation bound: never trust a lookup longer
	DefaultCacheEntries  = 100_000
	DefaultTouchInterval = 5 * time.Second
	DefaultMaxActiveKeys = 100
	DefaultChannel       = "attestd:" + ChannelSuffix
	lookupTimeout        = 3 * time.Second
)

// Config holds a Service's tunables, read from settings (Vars).
type Config struct {
	// CacheTTL bounds how long a node trusts a key lookup, and so how long
	// a revocation can take to reach a node that missed its announcement.
	// Default 4 s; more than MaxCacheTTL is an error.
	CacheTTL time.Duration
	// CacheEntries bounds the lookup cache (default 100,000).
	CacheEntries int
	// TouchInterval is how often last-used times are written (default 5 s).
	TouchInterval time.Duration
	// MaxActiveKeys per account (default 100; -1: no limit).
	MaxActiveKeys int
}

// Deps are what a Service works with: its Config, and its connections
// and collaborators.
type Deps struct {
	Config              // the tunables, from settings
	Store  *store.Store // required
	// Redis carries invalidations between nodes (nil: each node relies on
	// CacheTTL alone).
	Redis redis.UniversalClient
	// Channel is the Redis pub/sub channel of invalidations; default
	// DefaultChannel. Give every node of a deployment the same one
	// (<ATTESTD_REDIS_PREFIX>apikey:invalidate).
	Channel string
	// Passive services (the CLI) neither subscribe to invalidations nor
	// record last use: they only manage keys and announce revocations.
	Passive bool
	// Sessions, when set, authenticates the requests to the account routes
	// (Require without OnMissingKey, RequireAdmin) that carry no key but a
	// signed-in session of the web application (package web).
	Sessions   Sessions
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Service authenticates requests by API key and manages keys. It is safe
// for concurrent use; Close stops its goroutines and writes pending
// last-used times.
type Service struct {
	opt      Deps
	origin   string // names this service's announcements, so it can ignore their echo
	st       *store.Store
	log      *slog.Logger
	cache    *keyCache
	gen      atomic.Uint64 // bumped by every invalidation; a load that saw a bump is not cached
	sf       singleflight.Group
	touches  *toucher
	m        *metrics
	stop     context.CancelFunc
	wg       sync.WaitGroup
	listener *pubsub.Listener
}

// New makes a Service. Unless opt.Passive, it subscribes to invalidations
// (when opt.Redis is set) and starts the last-used writer.
func New(ctx context.Context, opt Deps) (*Service, error) {
	if opt.Store == nil {
		return nil, errors.New("apikey: a store is required")
	}
	if opt.CacheTTL == 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.CacheTTL < 0 || opt.CacheTTL > MaxCacheTTL {
		return nil, fmt.Errorf("apikey: cache TTL must be within (0, %s], got %s", MaxCacheTTL, opt.CacheTTL)
	}
	if opt.CacheEntries <= 0 {
		opt.CacheEntries = DefaultCacheEntries
	}
	if opt.TouchInterval <= 0 {
		opt.TouchInterval = DefaultTouchInterval
	}
	if opt.MaxActiveKeys == 0 {
		opt.MaxActiveKeys = DefaultMaxActiveKeys
	}
	if opt.Channel == "" {
		opt.Channel = DefaultChannel
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("apikey: service id: %w", err)
	}
	s := &Service{opt: opt, origin: hex.EncodeToString(id[:]), st: opt.Store, log: opt.Logger, cache: newKeyCache(opt.CacheEntries),
		touches: &toucher{pending: map[int64]time.Time{}}, m: newMetrics(opt.Registerer)}
	bg, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	if opt.Passive {
		return s, nil
	}
	if opt.Redis != nil {
		s.listener = pubsub.Listen(opt.Redis, opt.Channel, pubsub.Handlers{
			// Announcements made while we were not listening are lost, so
			// stop trusting every lookup at each (re)subscription.
			Resync: func(context.Context) { s.invalidateAll() },
			Message: func(payload string) {
				prefix, origin, _ := strings.Cut(payload, announceSep)
				if origin == s.origin {
					// Our own announcement: announce already dropped the
					// lookup, and a lookup made since read the committed
					// change, so dropping it again would only cost a read
					// (and fail one during a database outage).
					return
				}
				s.Invalidate(prefix)
				s.m.invalidations.Inc()
			},
		})
	}
	s.wg.Add(1)
	go s.flushLoop(bg)
	return s, nil
}

// closedChan is a channel that is already closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Listening is closed once this node hears key revocations announced by
// other nodes (at once when there is no Redis: then only the lookup TTL
// bounds how long a revoked key is trusted). A lookup cached before that
// may be dropped when the subscription starts.
func (s *Service) Listening() <-chan struct{} {
	if s.listener == nil {
		return closedChan
	}
	return s.listener.Subscribed()
}

// Close stops the goroutines and writes the pending last-used times.
func (s *Service) Close() {
	s.stop()
	if s.listener != nil {
		s.listener.Close()
	}
	s.wg.Wait()
	if !s.opt.Passive {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.flush(ctx)
	}
}

// CacheTTL is how long this node trusts a key lookup.
func (s *Service) CacheTTL() time.Duration { return s.opt.CacheTTL }

// Invalidate drops this node's cached lookup of prefix.
func (s *Service) Invalidate(prefix string) {
	s.gen.Add(1)
	s.cache.delete(prefix)
}

// invalidateAll drops every cached lookup (after a gap in the subscription).
func (s *Service) invalidateAll() {
	s.gen.Add(1)
	s.cache.clear()
}

// announceSep separates an announced prefix from the id of the service that
// announced it ("<prefix>/<origin>"; '/' is not base58, so it cannot occur
// in a prefix). A payload without it is a bare prefix from any origin.
const announceSep = "/"

// announce invalidates prefix here and tells the other nodes. When Redis
// is unreachable the other nodes still stop trusting their lookup within
// CacheTTL. The change is committed before announce runs, so once the local
// invalidation is done this node needs nothing more: its own announcement,
// coming back over the subscription, is ignored.
func (s *Service) announce(ctx context.Context, prefix string) {
	s.Invalidate(prefix)
	if s.opt.Redis == nil {
		return
	}
	if err := pubsub.Publish(ctx, s.opt.Redis, s.opt.Channel, prefix+announceSep+s.origin, time.Second); err != nil {
		s.log.Warn("announce key change: other nodes rely on the lookup TTL", "prefix", prefix,
			"ttl", s.opt.CacheTTL.String(), "err", err)
	}
}

// lookup returns the stored key of prefix (nil when there is none), from
// the node's cache when it is fresh.
func (s *Service) lookup(ctx context.Context, prefix string) (*store.APIKey, error) {
	now := s.opt.Now()
	if k, ok := s.cache.get(prefix, now); ok {
		s.m.lookups.WithLabelValues("cache").Inc()
		return k, nil
	}
	gen := s.gen.Load()
	v, err, _ := s.sf.Do(prefix, func() (any, error) {
		s.m.lookups.WithLabelValues("database").Inc()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		k, err := s.st.KeyByPrefix(lctx, prefix)
		var kp *store.APIKey
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			kp = &k
		}
		// Expire from the time the read started, and only keep it when no
		// invalidation arrived while reading (it may predate a revocation).
		if s.gen.Load() == gen {
			s.cache.set(prefix, kp, now.Add(s.opt.CacheTTL))
		}
		return kp, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*store.APIKey), nil
}

// keyCache is a bounded in-process map of key lookups with expiry.
type keyCache struct {
	mu  sync.RWMutex
	m   map[string]cacheEntry
	max int
}

type cacheEntry struct {
	key     *store.APIKey // nil: no key has this prefix
	expires time.Time
}

func newKeyCache(max int) *keyCache { return &keyCache{m: map[string]cacheEntry{}, max: max} }

func (c *keyCache) get(prefix string, now time.Time) (*store.APIKey, bool) {
	c.mu.RLock()
	e, ok := c.m[prefix]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.key, true
}

func (c *keyCache) set(prefix string, k *store.APIKey, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Drop the expired entries, then an arbitrary tenth if still full.
		now := time.Now()
		for p, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, p)
			}
		}
		drop := len(c.m) - c.max + c.max/10 + 1
		for p := range c.m {
			if drop <= 0 {
				break
			}
			delete(c.m, p)
			drop--
		}
	}
	c.m[prefix] = cacheEntry{key: k, expires: expires}
}

func (c *keyCache) delete(prefix string) {
	c.mu.Lock()
	delete(c.m, prefix)
	c.mu.Unlock()
}

func (c *keyCache) clear() {
	c.mu.Lock()
	c.m = map[string]cacheEntry{}
	c.mu.Unlock()
}

// toucher collects last-used times to write them in batches.
type toucher struct {
	mu      sync.Mutex
	pending map[int64]time.Time
}

func (t *toucher) touch(id int64, at time.Time) {
	t.mu.Lock()
	if cur, ok := t.pending[id]; !ok || at.After(cur) {
		t.pending[id] = at
	}
	t.mu.Unlock()
}

func (t *toucher) take() map[int64]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = make(map[int64]time.Time, len(p))
	return p
}

// putBack returns a batch that could not be written, keeping newer times.
func (t *toucher) putBack(p map[int64]time.Time) {
	for id, at := range p {
		t.touch(id, at)
	}
}

func (s *Service) flushLoop(ctx context.Context) {
	defer s.wg.Done()
	tick := time.NewTicker(s.opt.TouchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fctx, cancel := context.WithTimeout(ctx, s.opt.TouchInterval)
		s.flush(fctx)
		cancel()
	}
}

// Flush writes the pending last-used times now (tests; Close does it too).
func (s *Service) Flush(ctx context.Context) error {
	return s.flush(ctx)
}

func (s *Service) flush(ctx context.Context) error {
	p := s.touches.take()
	if len(p) == 0 {
		return nil
	}
	ids, at := make([]int64, 0, len(p)), make([]time.Time, 0, len(p))
	for id, t := range p {
		ids, at = append(ids, id), append(at, t.UTC())
	}
	if err := s.st.TouchKeys(ctx, ids, at); err != nil {
		s.touches.putBack(p)
		s.log.Warn("record key use: will retry", "keys", len(ids), "err", err)
		return err
	}
	s.m.touchFlushes.Inc()
	return nil
}

type metrics struct {
	auth *prometheus.CounterVec
	// delegated is auth{result="missing_delegated"}: every unpaid
	// premium request counts it, looked up once.
	delegated     prometheus.Counter
	lookups       *prometheus.CounterVec
	invalidations prometheus.Counter
	touchFlushes  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_apikey_auth_total",
			Help: "API key checks by result (ok, missing, malformed, unknown, revoked, error)."}, []string{"result"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_apikey_lookups_total",
			Help: "Key lookups by source (cache, database)."}, []string{"source"}),
		invalidations: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_apikey_invalidations_total",
			Help: "Key invalidations received from other nodes."}),
		touchFlushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_apikey_last_used_flushes_total",
			Help: "Batched writes of last-used times."}),
	}
	m.auth, m.lookups = metric.Register(reg, m.auth), metric.Register(reg, m.lookups)
	m.invalidations, m.touchFlushes = metric.Register(reg, m.invalidations), metric.Register(reg, m.touchFlushes)
	m.delegated = m.auth.WithLabelValues("missing_delegated")
	return m
}
