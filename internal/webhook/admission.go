package webhook

import (
	"context"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// admitted reports whether t's job may be sent now: on the turn it holds
// (taken when it asked: admitted by every limit), or admitted now by the
// webhook's rates and its host's cap, waiting in place for a turn at most
// hostRetry away. Otherwise the job was put off (its outcome recorded):
// held in the retry set until its turn, which it waits for once.
func (w *Worker) admitted(ctx context.Context, t *task, h *hook) bool {
	m, job := t.msg, t.msg.Job
	defer w.disp.booked(t) // the next job of the lane may ask for its turn
	now := w.now()
	switch ok, early := onTurn(turnOf(job), now); {
	case early:
		w.holdForTurn(m, job, turnOf(job))
		return false
	case ok:
		return w.waitForTurn(ctx, m, turnOf(job))
	}
	rate := w.ownRate(h)
	onOwn := false
	switch turn, ok, early := heldOwnTurn(job, rate, now); {
	case early:
		w.holdForOwnTurn(m, job, turn, rate)
		return false
	case ok:
		// Its own turn: its host's turn is taken on it.
		if !w.waitForTurn(ctx, m, turn) {
			return false
		}
		onOwn = true
	} // else none, missed, or taken at a rate since changed: a new one
	if rate == 0 {
		// No own rate: the server's per-webhook ceiling.
		if wait, ok := w.admit(ctx, w.thr, job.Webhook); !ok {
			w.deferJob(m, wait, "throttled")
			return false
		}
	}
	cap, to := w.capOf(h), w.dests.of(ctx, h.host).key
	wait, ownOnly := slot(ctx, w.rdb, w.prefix, cap, to, h.id, rate, onOwn)
	w.disp.booked(t)
	if ownOnly {
		if wait > hostRetry {
			// Over its own rate: the job waits for its webhook's turn in
			// the retry set, and takes its host's turn on it.
			w.holdForOwnTurn(m, job, w.now().Add(wait), rate)
			return false
		}
		if wait > 0 && !pause.For(ctx, wait) {
			w.rec.add(outcome{part: m.Part, releaseOnly: m.StreamID})
			return false
		}
		wait, _ = slot(ctx, w.rdb, w.prefix, cap, to, h.id, rate, true)
	}
	if wait > hostRetry {
		// Over the host's cap: the job waits for its turn in the retry
		// set, without an attempt, and is sent on it.
		w.holdForTurn(m, job, w.now().Add(wait))
		return false
	}
	if wait > 0 && !pause.For(ctx, wait) {
		w.rec.add(outcome{part: m.Part, releaseOnly: m.StreamID})
		return false
	}
	return true
}

// waitForTurn waits in place for a turn a job came back for (due
// turnLead before it): false when the worker stopped meanwhile (the job
// is released, taken over later).
func (w *Worker) waitForTurn(ctx context.Context, m queue.Msg, turn time.Time) bool {
	if wait := turn.Sub(w.now()); wait > 0 && !pause.For(ctx, wait) {
		w.rec.add(outcome{part: m.Part, releaseOnly: m.StreamID})
		return false
	}
	return true
}

// ownRate is the rate of h's own schedule: its rateLimitPerSecond within
// the server's per-webhook ceiling (0: none set; the ceiling alone then
// applies, through the throttle).
func (w *Worker) ownRate(h *hook) int {
	if h.rate <= 0 {
		return 0
	}
	if w.cfg.EndpointRate > 0 {
		return min(h.rate, w.cfg.EndpointRate)
	}
	return h.rate
}

// admit waits (briefly) for the throttle to count one more request to
// id; when it does not within a few short waits, it reports how long to
// put the job off.
func (w *Worker) admit(ctx context.Context, t *throttle, id string) (time.Duration, bool) {
	var wait time.Duration
	for range 3 {
		wait = t.wait(ctx, id)
		if wait == 0 {
			return 0, true
		}
		if wait > time.Second || !pause.For(ctx, wait) {
			break
		}
	}
	return max(wait, 10*time.Millisecond), false
}

// capOf is the per-host cap h's requests share: the verified one once its
// receiver answered the challenge, the unverified one before.
func (w *Worker) capOf(h *hook) *hostCap {
	if h.verified {
		return w.verifiedCap
	}
	return w.unverifiedCap
}

// turnOf is the turn at its host's cap job holds (zero: none).
func turnOf(job *queue.Job) time.Time {
	if job.Turn == 0 {
		return time.Time{}
	}
	return time.UnixMilli(job.Turn)
}

// ownTurnOf is the turn at its webhook's own rate job holds (zero: none).
func ownTurnOf(job *queue.Job) time.Time {
	if job.Own == 0 {
		return time.Time{}
	}
	return time.UnixMilli(job.Own)
}

// heldOwnTurn is the turn at its webhook's own rate job holds, when it
// was taken at rate (> 0): whether job may go on it at now (after waiting
// in place for it) or is early (held again). Neither: it holds none, or
// one taken at another rate (the webhook's rate changed since), missed,
// or not one this service took; it asks for a new turn.
func heldOwnTurn(job *queue.Job, rate int, now time.Time) (turn time.Time, ok, early bool) {
	if rate <= 0 || job.OwnRate != rate {
		return time.Time{}, false, false
	}
	turn = ownTurnOf(job)
	ok, early = onTurn(turn, now)
	return turn, ok, early
}

// holdForTurn puts a job back in the retry set, without an attempt, until
// its turn at its host's cap (due turnLead before it), and records the
// turn in the job so that it is sent on it without asking the cap again.
func (w *Worker) holdForTurn(m queue.Msg, job *queue.Job, turn time.Time) {
	held := *job
	held.Turn, held.Own, held.OwnRate = turn.UnixMilli(), 0, 0
	w.m.deferred.WithLabelValues("host_rate").Inc()
	w.rec.add(outcome{part: m.Part, result: resultDeferred,
		settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, At: dueFor(turn, w.now()), Record: &held}})
}

// holdForOwnTurn puts a job back in the retry set, without an attempt,
// until its turn at its webhook's own rate (taken at rate per second; due
// turnLead before it), and
// records the turn in the job: on it, the job takes its host's turn
// without asking its webhook's rate again.
func (w *Worker) holdForOwnTurn(m queue.Msg, job *queue.Job, turn time.Time, rate int) {
	held := *job
	held.Turn, held.Own, held.OwnRate = 0, turn.UnixMilli(), rate
	w.m.deferred.WithLabelValues("throttled").Inc()
	w.rec.add(outcome{part: m.Part, result: resultDeferred,
		settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, At: dueFor(turn, w.now()), Record: &held}})
}
