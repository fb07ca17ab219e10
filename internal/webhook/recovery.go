package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// Recovery constants.
const (
	// recoveryLease is how long a worker holds a recovery without
	// progress before another takes it over.
	recoveryLease = 30 * time.Second
	// recoveryPoll is how often an idle worker looks for recoveries.
	recoveryPoll = time.Second
	// recoveryBacklog is the most messages a partition's stream holds
	// (waiting or being sent) before a recovery queues more: live
	// deliveries of that partition never wait behind more than about
	// this many recovered ones.
	recoveryBacklog = 64
	// recoveryMaxBatch bounds one batch of a recovery.
	recoveryMaxBatch = 500
	// recoveryStartRate and recoveryMinRate bound the adaptive rate of a
	// worker's recoveries (deliveries per second, within the configured
	// rate; see pace).
	recoveryStartRate = 500
	recoveryMinRate   = 20 // and never below a tenth of the configured rate
	// recoveryYield is the longest a step of a recovery (a batch queued
	// again, a recovered send) waits for the worker's live work to pause.
	recoveryYield = 20 * time.Millisecond
	// recoveryLoops is how many recoveries (of different webhooks, or
	// windows) one worker runs at once.
	recoveryLoops = 4
)

// recoverLoop runs recoveries (POST /webhooks/:id/recover), one at a time
// per loop (a worker runs recoveryLoops): it makes the window's
// deliveries pending again in batches and queues their jobs, at the
// worker's pace (at most cfg.RecoveryRate per second for all its
// recoveries, lower while the live latency grows; never faster than the
// webhook's own limits), only while the partition's stream is short and
// the worker has no live work in progress, so live deliveries keep their
// latency.
func (w *Worker) recoverLoop(ctx context.Context) {
	for ctx.Err() == nil {
		r, ok, err := w.st.ClaimRecovery(ctx, recoveryLease)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("looking for recoveries failed", "err", err)
			}
			pause.For(ctx, 5*time.Second)
			continue
		}
		if !ok {
			pause.For(ctx, recoveryPoll)
			continue
		}
		w.runRecovery(ctx, r)
	}
}

// recoveryRate is how many deliveries per second a recovery of webhook h
// queues: the configured rate, within the webhook's limits.
func (w *Worker) recoveryRate(h *hook) int {
	rate := w.cfg.RecoveryRate
	if w.cfg.EndpointRate > 0 {
		rate = min(rate, w.cfg.EndpointRate)
	}
	if h != nil && h.rate > 0 {
		rate = min(rate, h.rate)
	}
	return max(rate, 1)
}

func (w *Worker) runRecovery(ctx context.Context, r store.Recovery) {
	log := w.log.With("recovery", r.ID, "webhook", r.WebhookID)
	log.Info("recovery: queueing deliveries again", "since", r.Since, "until", r.Until, "only_failed", r.OnlyFailed,
		"total", r.Total, "queued_before", r.Queued)
	h, err := w.hooks.get(ctx, r.WebhookID)
	if err != nil {
		log.Warn("recovery: cannot load its webhook; another try later", "err", err)
		return // the lease runs out and a worker takes it again
	}
	w.pace.begin()
	defer func() { w.pace.end(time.Now()) }()
	limit := w.recoveryRate(h) // this recovery's own bound (the webhook's limits)
	perStep := min(recoveryMaxBatch, max(1, limit/paceStep))
	p := w.q.Partition(r.WebhookID)
	start, queued := time.Now(), 0
	next := start
	var wait time.Duration
	for ctx.Err() == nil {
		// Steps of this recovery's share of the worker's rate for a fifth
		// of a second.
		batch := w.pace.step(perStep)
		// The webhook's own limits: batches spaced batch/limit apart.
		if time.Now().Before(next) {
			pause.For(ctx, time.Until(next))
		}
		// The backlog: wait while the partition's stream is long.
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := w.q.StreamLen(lctx, p)
		cancel()
		if err == nil && n >= recoveryBacklog {
			pause.For(ctx, 10*time.Millisecond)
			continue
		}
		// The worker's rate (set by the live latency), then live work
		// first: the batch waits until this worker has none.
		if !w.pace.take(ctx, batch) || !w.live.wait(ctx, recoveryYield) {
			break
		}
		next = time.Now().Add(time.Duration(float64(batch) / float64(limit) * float64(time.Second)))
		djs, done, err := w.st.RecoverBatch(ctx, r.ID, batch, recoveryLease)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			wait = backoff(wait, 5*time.Second)
			log.Warn("recovery: a batch failed; retrying", "err", err, "retry_in", wait.String())
			pause.For(ctx, wait)
			continue
		}
		wait = 0
		if len(djs) > 0 {
			now := w.now().UnixMilli()
			jobs := make([]queue.Job, len(djs))
			for i, d := range djs {
				jobs[i] = queue.Job{ID: d.ID, Delivery: d.ID, Webhook: d.WebhookID, Event: d.Event.ID, Type: d.Event.Type,
					Created: d.Event.CreatedAt.UnixMilli(), Queued: now, Attempts: d.Attempts, Base: d.AttemptsBase, Recovery: true, Body: Body(d.Event, w.opt.Origin)}
			}
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := w.q.Enqueue(qctx, jobs)
			cancel()
			if err != nil {
				// Pending in PostgreSQL without a job: the reconciliation
				// queues them.
				log.Warn("recovery: queueing a batch failed; the reconciliation queues it", "err", err, "n", len(jobs))
			}
			queued += len(jobs)
			w.m.recovered.Add(float64(len(jobs)))
		}
		if done {
			log.Info("recovery: done", "queued", queued, "seconds", time.Since(start).Seconds(), "rate_now", w.pace.current())
			return
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = w.st.ReleaseRecovery(rctx, r.ID)
}

// liveGate gives a worker's live work priority over its recoveries: it
// counts the live work in progress here (the relay publishing, the
// fan-out making deliveries, live jobs between their read and their
// attempt), and recovery work (a batch queued again, a recovered send,
// the recorder's flush) starts only while there is none, or after
// waiting recoveryYield. Live
// jobs waiting in a busy endpoint's backlog are not counted: a slow
// receiver does not hold the recoveries up.
type liveGate struct {
	mu    sync.Mutex
	n     int
	quiet chan struct{} // closed while n == 0
}

func newLiveGate() *liveGate {
	g := &liveGate{quiet: make(chan struct{})}
	close(g.quiet)
	return g
}

// begin counts k more pieces of live work in progress.
func (g *liveGate) begin(k int) {
	if k <= 0 {
		return
	}
	g.mu.Lock()
	if g.n == 0 {
		g.quiet = make(chan struct{})
	}
	g.n += k
	g.mu.Unlock()
}

// end counts k pieces of live work done.
func (g *liveGate) end(k int) {
	if k <= 0 {
		return
	}
	g.mu.Lock()
	g.n = max(g.n-k, 0)
	if g.n == 0 {
		select {
		case <-g.quiet:
		default:
			close(g.quiet)
		}
	}
	g.mu.Unlock()
}

// busy is the live work in progress.
func (g *liveGate) busy() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// wait blocks until no live work is in progress, or for at most max (so
// a worker whose live work never stops still recovers, slowly); false
// when ctx ended.
func (g *liveGate) wait(ctx context.Context, max time.Duration) bool {
	g.mu.Lock()
	ch := g.quiet
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}
