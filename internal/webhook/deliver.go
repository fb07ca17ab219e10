package webhook

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// statusFresh is how long a batch check of a job's delivery status (as
// it is read) stands for the check before its send; a job that waited
// longer in this worker is checked again on its own.
const statusFresh = time.Second

// deliver makes one attempt of t's job, or puts the job off: when its
// webhook still wants it, every limit admits it and the receiver's circuit
// is closed.
func (w *Worker) deliver(ctx context.Context, t *task) {
	h, ok := w.deliverable(ctx, t)
	if !ok || !w.admitted(ctx, t, h) {
		return
	}
	b, ok := w.circuitClosed(t)
	if !ok {
		return
	}
	m, job := t.msg, t.msg.Job
	if job.Attempts == 0 && !job.Manual && !job.Recovery && job.Created > 0 {
		// A live delivery: its commit-to-attempt latency sets the pace of
		// this worker's recoveries.
		w.pace.observe(time.Since(time.UnixMilli(job.Created)), time.Now())
	}
	res := w.send(ctx, h, job)
	if ctx.Err() != nil { // stopped mid-attempt: not the receiver's failure
		w.rec.add(outcome{part: m.Part, releaseOnly: m.StreamID})
		return
	}
	b.record(!res.breakerFailure(), w.now())
	w.m.attemptSeconds.Observe(res.latency.Seconds())
	w.rec.add(w.outcomeOf(m, job, res))
}

// deliverable loads t's webhook and says whether its job is still to be
// sent: the webhook exists and is active (a test event goes to an
// inactive one too), a retry's delivery is still pending, and the
// receiver asked for no pause. Otherwise the job's outcome is recorded
// (dropped, or put off).
func (w *Worker) deliverable(ctx context.Context, t *task) (*hook, bool) {
	m, job := t.msg, t.msg.Job
	h, err := w.hooks.get(ctx, job.Webhook)
	if err != nil {
		w.log.Error("cannot load a webhook to deliver to; the job waits", "webhook", job.Webhook, "err", err)
		w.deferJob(m, deferOnError, "error")
		return nil, false
	}
	if !h.found { // deleted with its deliveries: drop its parked jobs too
		w.rec.add(outcome{part: m.Part, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, Done: true},
			result: resultDropped, unpark: job.Webhook})
		return nil, false
	}
	if !h.active && job.Type != store.EventWebhookTest {
		o := outcome{part: m.Part, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, Done: true},
			result: resultDropped, unpark: job.Webhook}
		if !job.Manual {
			o.fail = job.Delivery
		}
		w.rec.add(o)
		return nil, false
	}
	if !w.stillPending(ctx, t) {
		return nil, false
	}
	if !job.Manual {
		if until, ok := w.pauses.until(job.Webhook, w.now()); ok {
			// The receiver asked for a pause (Retry-After on 429, 502,
			// 503 or 504): its jobs wait until then.
			w.deferJob(m, until, "receiver_paused")
			return nil, false
		}
	}
	return h, true
}

// stillPending says whether a retry's delivery is still to be made: it
// may have succeeded since (a manual retry). It is checked as it was
// read, unless it waited here since. A first attempt or a manual one is
// always pending. Otherwise the job is dropped or put off.
func (w *Worker) stillPending(ctx context.Context, t *task) bool {
	m, job := t.msg, t.msg.Job
	if job.Attempts == 0 || job.Manual || (!t.checked.IsZero() && time.Since(t.checked) <= statusFresh) {
		return true
	}
	done := func(result deliveryResult) {
		w.rec.add(outcome{part: m.Part, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, Done: true}, result: result})
	}
	st, err := w.st.DeliveryStatus(ctx, job.Delivery)
	switch {
	case errors.Is(err, store.ErrNotFound):
		done(resultDropped)
		return false
	case err != nil:
		w.deferJob(m, deferOnError, "error")
		return false
	case st != store.DeliveryPending:
		done(resultDropped)
		return false
	}
	return true
}

// circuitClosed returns the breaker of t's webhook when it lets the
// attempt through. While the receiver keeps failing, the job is parked
// with the webhook's others instead: one of them probes the receiver now
// and then, and the first success brings them back.
func (w *Worker) circuitClosed(t *task) (*breaker, bool) {
	m, job := t.msg, t.msg.Job
	b := w.brk.get(job.Webhook)
	if ok, _, _ := b.allow(w.now()); !ok {
		w.m.deferred.WithLabelValues("circuit_open").Inc()
		w.rec.add(outcome{part: m.Part, result: resultDeferred, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID,
			Park: job.Webhook, ProbeAt: w.now().Add(w.probeEvery)}})
		return nil, false
	}
	return b, true
}

// result is what one attempt got.
type result struct {
	at         time.Time
	status     int // 0: no response
	latency    time.Duration
	err        string
	snippet    string
	retryAfter time.Duration
}

func (r result) ok() bool { return r.err == "" && r.status >= 200 && r.status < 300 }

// breakerFailure: the endpoint did not answer sanely (no answer, 5xx, 429).
func (r result) breakerFailure() bool {
	return r.status == 0 || r.status >= 500 || r.status == http.StatusTooManyRequests
}

// outcomeOf decides what follows an attempt: done, a retry per the
// schedule (never sooner than the receiver's Retry-After), or failed.
func (w *Worker) outcomeOf(m queue.Msg, job *queue.Job, r result) outcome {
	n := job.Attempts + 1
	run := max(n-job.Base, 1) // the attempt of the current run
	rec := &store.AttemptRecord{DeliveryID: job.Delivery, WebhookID: job.Webhook, Attempt: n, Manual: job.Manual, At: r.at,
		Succeeded: r.ok(), StatusCode: r.status, Latency: r.latency, Error: r.err, Response: r.snippet,
		Gone: r.status == http.StatusGone && !job.Manual}
	o := outcome{part: m.Part, attempt: rec, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, Done: true}}
	switch {
	case r.ok():
		o.result = resultSucceeded
		o.lag = w.now().Sub(time.UnixMilli(job.Created))
	case job.Manual || rec.Gone || run > len(w.cfg.Schedule):
		o.result = resultFailed
	default:
		wait := w.cfg.Schedule[run-1]
		wait += time.Duration(rand.Int64N(int64(wait/10) + 1)) // spread retries of a burst
		if r.retryAfter > wait {
			wait = min(r.retryAfter, maxRetryAfter)
		}
		if r.retryAfter > 0 {
			w.pauses.set(job.Webhook, r.at.Add(min(r.retryAfter, maxRetryAfter)))
		}
		next := r.at.Add(wait)
		rec.NextAttemptAt = &next
		retry := *job
		retry.Attempts, retry.Turn, retry.Own, retry.OwnRate = n, 0, 0, 0
		o.settle = queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, At: next, Record: &retry}
		o.result = resultRetrying
	}
	return o
}
