package webhook

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// task is one job message this worker holds.
type task struct {
	msg queue.Msg
	// checked is when the delivery of a retry or recovered job was seen
	// pending (a batch check as it was read); zero: not checked yet.
	checked time.Time
	// live: counted in the worker's live work until its attempt starts.
	live bool
	// lane and ticket order the turns a lane's live jobs ask for: a job
	// asks once every job that reached the lane before it asked (or went
	// without asking), so jobs held for turns are sent in the order they
	// arrived (nil lane: not ordered, as recovered jobs are not).
	lane   *lane
	ticket uint64
	booked bool
}

// tryAcquire takes up to n tokens without waiting and returns how many.
func (w *Worker) tryAcquire(n int) int {
	k := 0
	for k < n {
		select {
		case w.tokens <- struct{}{}:
			k++
			continue
		default:
		}
		break
	}
	return k
}

// acquireOne waits for a token; false when ctx ended.
func (w *Worker) acquireOne(ctx context.Context) bool {
	select {
	case w.tokens <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *Worker) release(n int) {
	for range n {
		<-w.tokens
	}
}

// read takes new jobs of partition p as long as this worker has room. It
// takes what is waiting without blocking, with as many tokens as it can
// get; when nothing waits, it blocks for one job holding one token, so an
// idle partition never sits on room the busy ones need.
func (w *Worker) read(ctx, sendCtx context.Context, p int) {
	var wait time.Duration
	for ctx.Err() == nil {
		k, block := w.tryAcquire(readBatch), time.Duration(0)
		if k == 0 {
			if !w.acquireOne(ctx) {
				return
			}
			k, block = 1, readBlock
		}
		msgs, err := w.q.Read(ctx, p, w.name, k, block)
		w.release(k - len(msgs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if queue.IsNoGroup(err) {
				w.recoverLostData(ctx, "a job stream's consumer group is gone")
				continue
			}
			wait = backoff(wait, 5*time.Second)
			w.log.Warn("reading jobs failed; retrying", "partition", p, "err", err, "retry_in", wait.String())
			pause.For(ctx, wait)
			continue
		}
		wait = 0
		w.acceptAll(ctx, sendCtx, msgs)
		if len(msgs) == 0 && block == 0 {
			// Nothing waiting: block for the next job with one token.
			if !w.acquireOne(ctx) {
				return
			}
			msgs, err = w.q.Read(ctx, p, w.name, 1, readBlock)
			w.release(1 - len(msgs))
			if err != nil && ctx.Err() == nil && !queue.IsNoGroup(err) {
				w.log.Warn("reading jobs failed; retrying", "partition", p, "err", err)
				pause.For(ctx, time.Second)
			}
			w.acceptAll(ctx, sendCtx, msgs)
		}
	}
}

// acceptAll takes job messages this worker now holds (one token each).
// The deliveries of retries and recovered jobs (attempted before: one may
// have succeeded since, by a manual retry) are checked in one query here,
// not one query per send: a recovery's thousands of jobs per second would
// otherwise cost as many queries, and the CPU the live deliveries need.
func (w *Worker) acceptAll(ctx, sendCtx context.Context, msgs []queue.Msg) {
	var ids []string
	for _, m := range msgs {
		if m.Job != nil && m.Job.Attempts > 0 && !m.Job.Manual {
			ids = append(ids, m.Job.Delivery)
		}
	}
	var statuses map[string]string
	checked := time.Now()
	if len(ids) > 0 {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		statuses, _ = w.st.DeliveryStatuses(sctx, ids) // on error: nil, and each is checked before its send
		cancel()
	}
	for _, m := range msgs {
		at := time.Time{}
		if m.Job != nil && statuses[m.Job.Delivery] == store.DeliveryPending {
			at = checked
		} // else (gone, settled since, or the query failed) deliver checks it on its own, as it always did
		w.accept(sendCtx, m, at)
	}
}

// accept takes a job message this worker now holds (one token).
func (w *Worker) accept(sendCtx context.Context, m queue.Msg, checked time.Time) {
	w.held.add(m.Part, m.StreamID)
	if m.Job == nil { // settled by a duplicate, or a stray message
		w.rec.add(outcome{part: m.Part, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, Done: true}, result: resultDropped})
		return
	}
	if !w.disp.submit(sendCtx, &task{msg: m, checked: checked}) {
		w.deferJob(m, w.disp.busyFor(m.Job.Webhook), "busy")
	}
}

// deferJob puts a job back in the retry set without an attempt.
func (w *Worker) deferJob(m queue.Msg, d time.Duration, reason string) {
	at := w.now().Add(d + time.Duration(rand.Int64N(int64(d/4)+1)))
	w.m.deferred.WithLabelValues(reason).Inc()
	w.rec.add(outcome{part: m.Part, settle: queue.Settlement{StreamID: m.StreamID, JobID: m.JobID, At: at}, result: resultDeferred})
}
