package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Allow after Close.
var ErrClosed = errors.New("rate limiter closed")

// errTimeout marks a round trip that exceeded Config.Timeout.
var errTimeout = errors.New("redis round trip timed out")

// errDegraded answers decisions that were queued when Redis failed.
var errDegraded = errors.New("redis unavailable")

// Decision is the outcome of one request.
type Decision struct {
	Allowed bool
	// Limit is the configured limit (0 when limiting is disabled).
	Limit int
	// Remaining is how many more requests the client may make right now.
	Remaining int
	// Reset is how long until the oldest request counted against the
	// client leaves the window, freeing a slot.
	Reset time.Duration
	// RetryAfter is how long a refused client must wait; 0 when allowed.
	RetryAfter time.Duration
	// Local is true when this node's in-memory window decided because
	// Redis was unavailable (or the client was still over the limit in it
	// just after Redis came back).
	Local bool

	at int64 // time of the decision on the deciding clock, ns (tests)
}

// Limiter limits requests per client with a sliding window shared by all
// nodes through Redis, falling back to a per-node window when Redis is
// unavailable. It is safe for concurrent use.
type Limiter struct {
	cfg      Config
	rdb      redis.UniversalClient
	resolver *IPResolver
	local    *localWindow
	log      *slog.Logger
	m        *metrics

	limitArg   any // script arguments, built once
	windowArg  any
	limitBytes []byte
	node       string // unique per Limiter: prefix of script members
	seq        atomic.Uint64

	queue    chan *pending
	pool     sync.Pool
	degraded atomic.Bool
	// recoveredUntil (local clock, ns; 0 = none): for one window after Redis
	// came back, clients this node admitted while it was down stay limited
	// by the local window too, since Redis never saw those requests.
	recoveredUntil atomic.Int64
	// multiKey: decide a batch with one call of the batch script (all keys
	// on one server: a plain *redis.Client); otherwise a pipeline of
	// single-key calls.
	multiKey    atomic.Bool
	wakeProbe   chan struct{}
	closing     chan struct{}
	closeOnce   sync.Once
	wg          sync.WaitGroup
	lastItemLog atomic.Int64
	flightsMu   sync.Mutex
	flights     []*flight // one per sender
	// clockOffset is the local window's clock minus the Redis clock (ns),
	// as last seen by a round trip.
	clockOffset atomic.Int64
}

// pending is one decision waiting for its round trip.
type pending struct {
	key    string // Redis key
	member string // pipeline path: unique member of the sorted set
	res    Decision
	err    error
	done   chan struct{}
}

// New returns a limiter deciding in rdb (a *redis.Client, a
// *redis.ClusterClient, ...). It registers its metrics with reg when reg is
// not nil, and logs to log (slog.Default() when nil). It does not fail when
// Redis is unreachable: it starts degraded and recovers when Redis answers.
// Call Close when done.
func New(rdb redis.UniversalClient, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if rdb == nil && cfg.Limit > 0 {
		return nil, errors.New("rate limit: a Redis client is required")
	}
	if log == nil {
		log = slog.Default()
	}
	resolver := cfg.Resolver
	if resolver == nil {
		if resolver, err = NewIPResolver(cfg.TrustedProxies, cfg.ProxyHeader); err != nil {
			return nil, err
		}
	}
	m := newMetrics(reg)
	var id [6]byte
	_, _ = rand.Read(id[:])
	l := &Limiter{
		cfg:        cfg,
		rdb:        rdb,
		resolver:   resolver,
		log:        log.With("component", "ratelimit"),
		m:          m,
		limitArg:   cfg.Limit,
		windowArg:  cfg.Window.Microseconds(),
		limitBytes: []byte(strconv.Itoa(cfg.Limit)),
		node:       hex.EncodeToString(id[:]) + ":",
		queue:      make(chan *pending, 4*cfg.MaxBatch*cfg.Pipelines),
		wakeProbe:  make(chan struct{}, 1),
		closing:    make(chan struct{}),
	}
	if _, single := rdb.(*redis.Client); single && !cfg.SingleKeyScripts {
		l.multiKey.Store(true)
	}
	l.pool.New = func() any { return &pending{done: make(chan struct{}, 1)} }
	if cfg.Limit == 0 {
		return l, nil // disabled: no goroutines, Allow always allows
	}
	l.local = newLocalWindow(cfg.Limit, cfg.Window, cfg.Now)
	if err := l.loadScript(); err != nil {
		l.markDegraded(fmt.Errorf("load rate-limit script: %w", err))
	}
	l.wg.Add(cfg.Pipelines + 3)
	for range cfg.Pipelines {
		go l.sender()
	}
	go l.watchdog()
	go l.prober()
	go l.janitor()
	return l, nil
}

// Resolver returns the client-IP resolver the middleware uses, so that
// logs can name the same client.
func (l *Limiter) Resolver() *IPResolver { return l.resolver }

// Degraded reports whether Redis is unavailable and this node limits with
// its own in-memory window (for /health).
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Close stops the limiter's goroutines. Decisions still waiting are made
// by the local window; Allow returns ErrClosed afterwards.
func (l *Limiter) Close() {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.wg.Wait()
	})
}

func (l *Limiter) isClosed() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}

// Allow decides one request of the client identified by key (for HTTP, the
// middleware uses ClientKey of the client IP). It does not fail when Redis
// is unavailable: the local window decides and Decision.Local says so. It
// returns an error only when ctx ends before the decision or after Close.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	if l.cfg.Limit == 0 {
		return Decision{Allowed: true}, nil
	}
	return l.allow(ctx, key, l.cfg.KeyPrefix+key)
}

func (l *Limiter) allow(ctx context.Context, key, redisKey string) (Decision, error) {
	if l.isClosed() {
		return Decision{}, ErrClosed
	}
	if l.degraded.Load() {
		return l.localAllow(key), nil
	}
	if until := l.recoveredUntil.Load(); until != 0 {
		if l.local.clock() >= until {
			l.recoveredUntil.CompareAndSwap(until, 0)
		} else if d, full := l.local.full(key); full {
			l.m.count(d)
			return d, nil
		}
	}
	p := l.pool.Get().(*pending)
	p.key = redisKey
	select {
	case l.queue <- p: // the common case, without a full select
	default:
		select {
		case l.queue <- p:
		case <-l.closing:
			return Decision{}, ErrClosed
		case <-ctx.Done():
			return Decision{}, fmt.Errorf("rate limit decision: %w", ctx.Err())
		}
	}
	if done := ctx.Done(); done == nil {
		select {
		case <-p.done:
		case <-l.closing:
			return Decision{}, ErrClosed // p may still be in use: not pooled
		}
	} else {
		select {
		case <-p.done:
		case <-l.closing:
			return Decision{}, ErrClosed
		case <-done:
			return Decision{}, fmt.Errorf("rate limit decision: %w", ctx.Err())
		}
	}
	d, err := p.res, p.err
	*p = pending{done: p.done}
	l.pool.Put(p)
	if err != nil {
		return l.localAllow(key), nil
	}
	if d.Allowed {
		// Shadow it locally, on the local clock (without reading it: the
		// offset to the Redis clock is measured once per round trip).
		l.local.record(key, d.at+l.clockOffset.Load())
	}
	return d, nil // counted by the sender
}

// localAllow decides in this node's window.
func (l *Limiter) localAllow(key string) Decision {
	d := l.local.allow(key)
	l.m.count(d)
	return d
}

func (l *Limiter) member() string {
	var b [32]byte
	n := copy(b[:], l.node)
	return string(strconv.AppendUint(b[:n], l.seq.Add(1), 36))
}
