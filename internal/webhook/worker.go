package webhook

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/egress"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Pipeline constants.
const (
	relayBatch      = 500
	republishAfter  = 5 * time.Minute // a published event not fanned out by then is published again
	fanOutBatch     = 200
	readBlock       = 2 * time.Second
	readBatch       = 100
	flushEvery      = 25 * time.Millisecond
	flushMax        = 512
	moveEvery       = 100 * time.Millisecond
	moveBatch       = 1000
	sampleEvery     = 5 * time.Second
	progressEvery   = 30 * time.Second
	pruneEvery      = time.Hour
	pruneBatch      = 5000
	idleConsumer    = 24 * time.Hour
	snippetBytes    = 1024
	drainBytes      = 64 << 10
	maxErrorLen     = 300
	maxRetryAfter   = time.Hour
	deferOnError    = 5 * time.Second
	shutdownGrace   = 15 * time.Second
	defaultReconcil = 30 * time.Second
	// heldPerSender bounds the jobs a worker holds (being sent, waiting
	// in an endpoint's backlog, or waiting for their attempt to be
	// recorded) per sender: 1024 by default, about 1 MiB.
	heldPerSender = 16
	unparkBatch   = 1000 // parked jobs a webhook gets back per success
	// hostRetry is the longest a sender waits in place for its turn at
	// its host's cap; a later turn is waited for in the retry set.
	hostRetry = 250 * time.Millisecond
)

// WorkerDeps are what a Worker works with: its Config, and its
// connections and collaborators.
type WorkerDeps struct {
	Store      *store.Store // required
	Queue      *queue.Queue // required
	Config                  // the tunables, from settings; Config.Keys is required
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Origin is the public origin (ATTESTD_PUBLIC_URL): deliveries'
	// links are absolute on it (zero: paths). The same as the API nodes'.
	Origin config.Origin
	// Name names this worker's consumers (default host-pid-random).
	Name string
	// ReconcileEvery is how often pending deliveries are checked against
	// the queue (default 30 s); a delivery changed more recently is not.
	ReconcileEvery time.Duration
	// BreakerCooldown is a circuit's first cooldown (default 5 s).
	BreakerCooldown time.Duration
	// Resolver and TLS adjust the delivery client (tests).
	Resolver *net.Resolver
	TLS      *tls.Config
	Now      func() time.Time
}

// Worker relays outbox events to Redis, fans them out to webhooks and
// delivers them. Any number of workers can run against the same stores.
type Worker struct {
	opt    WorkerDeps
	cfg    Config
	st     *store.Store
	q      *queue.Queue
	log    *slog.Logger
	m      *metrics
	now    func() time.Time
	name   string
	egress *egress.Client
	// dests is where each host's requests connect, and the key of its
	// per-host caps: one per receiver address, however it is spelled.
	dests  *dests
	client *retryablehttp.Client
	hooks  *hookCache
	brk    *breakers
	thr    *throttle
	// verifiedCap and unverifiedCap cap the requests per destination
	// host, across accounts and workers, of verified webhooks and of the
	// others (deliveries and verification requests); nil: no cap.
	verifiedCap, unverifiedCap *hostCap
	// rdb and prefix hold the webhooks' own-rate schedules and the hosts'
	// (slot), shared by every worker.
	rdb    redis.UniversalClient
	prefix string
	// pauses are receivers that asked for a pause (Retry-After).
	pauses pauses
	// pace is the rate of this worker's recoveries, set by the live
	// deliveries' latency.
	pace *pace
	// live counts the live work in progress (recoveries wait for none).
	live *liveGate
	disp *dispatcher
	rec  *recorder

	tokens    chan struct{} // one per job held in this process
	held      heldSet
	reconcile chan struct{} // ask for a reconciliation now
	lostAt    atomic.Int64  // last data-loss handling, Unix ns
	counts    progressCounts
	// probeEvery is how often a parked webhook's receiver is probed.
	probeEvery time.Duration
}

// NewWorker checks the options and builds a worker.
func NewWorker(opt WorkerDeps) (*Worker, error) {
	if opt.Store == nil || opt.Queue == nil {
		return nil, errors.New("webhook worker: a store and a queue are required")
	}
	if !opt.Config.Enabled() {
		return nil, errors.New("webhook worker: ATTESTD_WEBHOOK_SECRET_KEYS is not set, so webhook secrets cannot be opened")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ReconcileEvery <= 0 {
		opt.ReconcileEvery = defaultReconcil
	}
	if opt.Name == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		opt.Name = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	cfg := opt.Config
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.RecoveryConcurrency <= 0 {
		cfg.RecoveryConcurrency = DefaultConfig().RecoveryConcurrency
	}
	w := &Worker{opt: opt, cfg: cfg, st: opt.Store, q: opt.Queue, log: opt.Logger.With("worker", opt.Name), now: opt.Now,
		name: opt.Name, m: newMetrics(opt.Registerer), reconcile: make(chan struct{}, 1),
		tokens: make(chan struct{}, heldPerSender*cfg.Concurrency)}
	policy := egress.Policy{AllowLoopback: cfg.AllowLoopback}
	w.egress = egress.NewClient(egress.Options{Policy: policy, Timeout: cfg.Timeout,
		Resolver: opt.Resolver, MaxConnsPerHost: cfg.EndpointConcurrency, TLS: opt.TLS})
	w.dests = newDests(opt.Resolver, policy)
	w.client = newRetryClient(w.egress)
	w.hooks = &hookCache{st: opt.Store, keys: cfg.Keys, now: opt.Now}
	w.brk = &breakers{minCool: opt.BreakerCooldown}
	w.probeEvery = 2 * breakerMinCooldown
	if opt.BreakerCooldown > 0 {
		w.probeEvery = 2 * opt.BreakerCooldown
	}
	w.thr = newThrottle(opt.Queue.Redis(), opt.Queue.Prefix(), cfg.EndpointRate)
	w.verifiedCap = newHostCap(opt.Queue.Redis(), opt.Queue.Prefix(), "v", cfg.HostRate)
	w.unverifiedCap = newHostCap(opt.Queue.Redis(), opt.Queue.Prefix(), "u", cfg.UnverifiedHostRate)
	w.rdb, w.prefix = opt.Queue.Redis(), opt.Queue.Prefix()
	if len(cfg.VerifySchedule) == 0 {
		w.cfg.VerifySchedule = DefaultVerifySchedule
	}
	w.disp = newDispatcher(w, cfg.Concurrency, cfg.EndpointConcurrency, cfg.RecoveryConcurrency)
	w.rec = newRecorder(w)
	w.live = newLiveGate()
	w.pace = newPace(max(recoveryMinRate, cfg.RecoveryRate/10), cfg.RecoveryRate, recoveryStartRate)
	w.pace.log = func(rate float64, p90, target time.Duration, n int) {
		w.log.Debug("recovery pace", "rate", int(rate), "live_p90_ms", p90.Milliseconds(), "target_ms", target.Milliseconds(), "live", n)
	}
	w.held.m = map[heldKey]struct{}{}
	return w, nil
}

// Run works until ctx ends, then lets deliveries in flight finish (within
// the attempt timeout), records them and returns.
func (w *Worker) Run(ctx context.Context) error {
	if _, err := w.ensureGroups(ctx); err != nil {
		return err
	}
	w.log.Info("webhook worker starting", "partitions", w.q.Partitions(), "concurrency", w.cfg.Concurrency,
		"endpoint_concurrency", w.cfg.EndpointConcurrency, "endpoint_rate", w.cfg.EndpointRate, "host_rate", w.cfg.HostRate, "unverified_host_rate", w.cfg.UnverifiedHostRate,
		"schedule", fmt.Sprint(w.cfg.Schedule), "timeout", w.cfg.Timeout.String(), "allow_loopback", w.cfg.AllowLoopback)
	// Sends run under their own context: at shutdown they finish (bounded
	// by the attempt timeout) and are recorded before the recorder stops.
	sendCtx, stopSends := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSends()
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	recDone := make(chan struct{})
	go func() { defer close(recDone); w.rec.run(recCtx) }()

	var wg sync.WaitGroup
	// Each loop runs until ctx ends; one that panics is logged and
	// started again a second later.
	spawn := func(name string, f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				func() {
					defer func() {
						if r := recover(); r != nil {
							w.log.Error("webhook worker loop panicked; restarting it", "loop", name, "panic", fmt.Sprint(r))
						}
					}()
					f(ctx)
				}()
				pause.For(ctx, time.Second)
			}
		}()
	}
	spawn("relay", w.relay)
	spawn("fanout", w.fanOut)
	for p := range w.q.Partitions() {
		spawn("reader", func(ctx context.Context) { w.read(ctx, sendCtx, p) })
	}
	spawn("keeper", func(ctx context.Context) { w.keep(ctx, sendCtx) })
	spawn("scheduler", w.schedule)
	spawn("maintenance", w.maintain)
	spawn("verifier", func(ctx context.Context) { w.verifyLoop(ctx, sendCtx) })
	for range recoveryLoops {
		spawn("recovery", w.recoverLoop)
	}
	spawn("changes", func(ctx context.Context) {
		w.q.WatchChanged(ctx, func(id string) {
			if id == "" {
				w.hooks.forgetAll()
				return
			}
			w.hooks.forget(id)
		})
	})
	wg.Wait()
	w.disp.stopping.Store(true)

	// Stopping: wait for sends in flight, then for their records.
	done := make(chan struct{})
	go func() { w.disp.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.Timeout + 2*time.Second):
		stopSends()
		<-done
	}
	w.rec.close()
	select {
	case <-recDone:
	case <-time.After(shutdownGrace):
		w.log.Warn("stopping before every attempt was recorded; their jobs will be taken over and sent again")
	}
	stopRec()
	<-recDone
	w.egress.CloseIdle()
	w.log.Info("webhook worker stopped")
	return nil
}

// ensureGroups creates missing streams and groups; a missing event group
// on a Redis that served us before means its data was lost.
func (w *Worker) ensureGroups(ctx context.Context) (bool, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	created, err := w.q.EnsureGroups(gctx)
	if err != nil {
		return false, fmt.Errorf("webhook queue: %w", err)
	}
	if created {
		// A first start, or a Redis that lost its data: replaying what
		// PostgreSQL says is unfinished is right (and cheap) in both cases.
		w.log.Info("created the webhook queue's consumer groups (first start, or Redis lost its data)")
		w.recoverLostData(ctx, "")
	}
	return created, nil
}

// recoverLostData handles a Redis that lost the pipeline's data (restarted
// without persistence, flushed): events published but not fanned out are
// published again, and pending deliveries without a job are queued again.
// Both are harmless when nothing was lost. At most once per few seconds.
func (w *Worker) recoverLostData(ctx context.Context, why string) {
	now := time.Now().UnixNano()
	last := w.lostAt.Load()
	if now-last < int64(3*time.Second) || !w.lostAt.CompareAndSwap(last, now) {
		return
	}
	if why != "" {
		w.m.dataLoss.Inc()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.q.EnsureGroups(rctx); err != nil {
		w.log.Warn("recreating the webhook queue's consumer groups failed", "err", err)
	}
	n, err := w.st.ForgetPublished(rctx)
	if err != nil {
		w.log.Warn("could not mark lost events for publishing again; they will be after "+republishAfter.String(), "err", err)
	}
	if why != "" {
		w.log.Warn("webhook queue lost its data; replaying from PostgreSQL", "why", why, "events_to_republish", n)
	}
	select {
	case w.reconcile <- struct{}{}:
	default:
	}
}

// heldSet tracks the job messages this worker holds, per partition, for
// the heartbeat that keeps other workers from taking them over. Stream
// ids are unique per stream only: two partitions can hand out the same.
type heldSet struct {
	mu sync.Mutex
	m  map[heldKey]struct{}
}

type heldKey struct {
	part int
	id   string
}

func (h *heldSet) add(p int, id string) {
	h.mu.Lock()
	h.m[heldKey{p, id}] = struct{}{}
	h.mu.Unlock()
}

func (h *heldSet) has(p int, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[heldKey{p, id}]
	return ok
}

func (h *heldSet) remove(p int, id string) {
	h.mu.Lock()
	delete(h.m, heldKey{p, id})
	h.mu.Unlock()
}

func (h *heldSet) byPartition(parts int) [][]string {
	out := make([][]string, parts)
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.m {
		out[k.part] = append(out[k.part], k.id)
	}
	return out
}

func (h *heldSet) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}

// progressCounts are what the progress line reports.
type progressCounts struct {
	relayed, fannedOut, succeeded, failed, deferred, dropped atomic.Int64
}

// backoff doubles d up to max.
func backoff(d, max time.Duration) time.Duration {
	if d <= 0 {
		return 100 * time.Millisecond
	}
	return min(2*d, max)
}
