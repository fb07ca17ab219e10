package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// outcome is what becomes of one job message this worker held.
type outcome struct {
	part    int
	settle  queue.Settlement
	attempt *store.AttemptRecord // logged in PostgreSQL before the job is settled
	fail    string               // a delivery to end without an attempt (webhook deactivated)
	result  deliveryResult       // for metrics; "" when none is counted
	lag     time.Duration        // event creation to a successful delivery
	// releaseOnly names a message to let go of without settling it
	// (shutdown): another worker takes it over.
	releaseOnly string
	// unpark names a webhook whose parked jobs go back onto the stream
	// (it was deleted or deactivated: they are dropped there).
	unpark string
}

// recorder writes outcomes in batches: the attempts to PostgreSQL in one
// transaction, then the settlements to Redis, then it releases the jobs.
// A job is acknowledged only after its attempt is logged; if either store
// fails, the batch is retried and no new batch starts.
type recorder struct {
	w       *Worker
	mu      sync.Mutex
	pending []outcome
	kick    chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newRecorder(w *Worker) *recorder {
	return &recorder{w: w, kick: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (r *recorder) add(o outcome) {
	r.mu.Lock()
	r.pending = append(r.pending, o)
	n := len(r.pending)
	r.mu.Unlock()
	if n >= flushMax {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// close asks run to write what is pending and return.
func (r *recorder) close() { r.once.Do(func() { close(r.closed) }) }

// run flushes until close (writing what is left) or until ctx ends
// (giving up on it).
func (r *recorder) run(ctx context.Context) {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		closing := false
		select {
		case <-ctx.Done():
			return
		case <-r.closed:
			closing = true
		case <-t.C:
		case <-r.kick:
		}
		if !closing {
			// The attempts' records wait (at most recoveryYield) while
			// the worker relays or fans out: a recovery's thousands of
			// records per second would otherwise compete with them for
			// PostgreSQL.
			r.w.live.wait(ctx, recoveryYield)
		}
		for {
			r.mu.Lock()
			batch := r.pending
			if len(batch) > flushMax {
				batch = batch[:flushMax]
			}
			r.pending = r.pending[len(batch):]
			r.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			r.flush(ctx, batch)
			if ctx.Err() != nil {
				return
			}
		}
		if closing {
			return
		}
	}
}

// flush makes a batch of outcomes durable, in order: the attempts in the
// log (and the deliveries that failed for good), then the jobs settled in
// their queues, parked jobs brought back for receivers that answered,
// and last the worker's accounts (held jobs, metrics). When ctx ends
// before the first two are done, it stops: the jobs stay held and are
// taken over.
func (r *recorder) flush(ctx context.Context, batch []outcome) {
	if !r.record(ctx, batch) || !r.settle(ctx, batch) {
		return
	}
	r.unpark(ctx, batch)
	r.account(batch)
}

// record writes the batch's attempts and failed deliveries, retrying
// while PostgreSQL is unavailable (false: ctx ended first).
func (r *recorder) record(ctx context.Context, batch []outcome) bool {
	w := r.w
	var attempts []store.AttemptRecord
	var fails []string
	for _, o := range batch {
		if o.attempt != nil {
			attempts = append(attempts, *o.attempt)
		}
		if o.fail != "" {
			fails = append(fails, o.fail)
		}
	}
	var wait time.Duration
	for len(attempts) > 0 || len(fails) > 0 {
		disabled, err := w.st.RecordAttempts(ctx, attempts, w.cfg.DisableAfter)
		if err == nil {
			err = w.st.FailDeliveries(ctx, fails)
		}
		if err == nil {
			if len(disabled) > 0 {
				w.hooks.forget(disabled...)
				w.m.deactivated.Add(float64(len(disabled)))
				w.log.Warn("webhooks deactivated: their deliveries kept failing (or the receiver answered 410)", "webhooks", disabled)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !store.IsUnavailable(err) && len(attempts) > 1 {
			// A statement error, not an outage: one bad record must not
			// hold the others. Record them one by one.
			attempts = r.oneByOne(ctx, attempts)
			continue
		}
		wait = backoff(wait, 5*time.Second)
		w.log.Warn("recording delivery attempts failed; retrying (their jobs stay held)", "attempts", len(attempts), "err", err,
			"retry_in", wait.String())
		pause.For(ctx, wait)
	}
	return true
}

// settle acknowledges the batch's jobs in their partitions' streams,
// retrying while Redis fails (false: ctx ended first).
func (r *recorder) settle(ctx context.Context, batch []outcome) bool {
	byPart := map[int][]queue.Settlement{}
	for _, o := range batch {
		if o.releaseOnly == "" {
			byPart[o.part] = append(byPart[o.part], o.settle)
		}
	}
	var wait time.Duration
	for p, ss := range byPart {
		for {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := r.w.q.Settle(sctx, p, ss)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return false
			}
			wait = backoff(wait, 5*time.Second)
			r.w.log.Warn("settling jobs failed; retrying", "partition", p, "jobs", len(ss), "err", err, "retry_in", wait.String())
			pause.For(ctx, wait)
		}
	}
	return true
}

// unpark gives webhooks that answered again (or are gone) their parked
// jobs back; a failure is left to the next success or probe.
func (r *recorder) unpark(ctx context.Context, batch []outcome) {
	byPart := map[int]map[string]bool{}
	for _, o := range batch {
		id := o.unpark
		if o.result == resultSucceeded {
			id = o.attempt.WebhookID
		}
		if id != "" {
			if byPart[o.part] == nil {
				byPart[o.part] = map[string]bool{}
			}
			byPart[o.part][id] = true
		}
	}
	for p, set := range byPart {
		ids := make([]string, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := r.w.q.Unpark(uctx, p, ids, unparkBatch)
		cancel()
		if err != nil {
			r.w.log.Warn("bringing parked jobs back failed; the next success or probe does", "partition", p, "err", err)
		} else if n > 0 {
			r.w.log.Info("a failing receiver answered again: parked jobs are back on the queue", "webhooks", ids, "jobs", n)
		}
	}
}

// account lets go of the batch's jobs (held, in flight) and counts their
// results.
func (r *recorder) account(batch []outcome) {
	w := r.w
	for _, o := range batch {
		id := o.settle.StreamID
		if o.releaseOnly != "" {
			id = o.releaseOnly
		}
		w.held.remove(o.part, id)
		w.release(1)
		if o.result == "" {
			continue
		}
		w.m.deliveries.WithLabelValues(string(o.result)).Inc()
		switch o.result {
		case resultSucceeded:
			w.counts.succeeded.Add(1)
			w.m.lag.Observe(o.lag.Seconds())
		case resultRetrying, resultFailed:
			w.counts.failed.Add(1)
		case resultDeferred:
			w.counts.deferred.Add(1)
		case resultDropped:
			w.counts.dropped.Add(1)
		}
		if o.attempt != nil {
			a := o.attempt
			w.log.Debug("delivery attempt", "webhook", a.WebhookID, "delivery", a.DeliveryID, "attempt", a.Attempt,
				"status", a.StatusCode, "ms", a.Latency.Milliseconds(), "result", o.result, "err", a.Error)
		}
	}
}

// oneByOne records attempts separately: one the database refuses is
// logged and dropped from the log (its job is settled all the same). It
// returns nil, or every attempt when the database became unavailable.
func (r *recorder) oneByOne(ctx context.Context, attempts []store.AttemptRecord) []store.AttemptRecord {
	for _, a := range attempts {
		disabled, err := r.w.st.RecordAttempts(ctx, []store.AttemptRecord{a}, r.w.cfg.DisableAfter)
		if err != nil {
			if store.IsUnavailable(err) {
				return attempts // an outage after all: retry them all
			}
			r.w.log.Error("an attempt could not be recorded and is dropped from the log", "delivery", a.DeliveryID, "err", err)
			continue
		}
		if len(disabled) > 0 {
			r.w.hooks.forget(disabled...)
		}
	}
	return nil
}
