package webhook

import (
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/egress"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/hashicorp/go-retryablehttp"
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

// bookingWait bounds how long a job waits for the jobs ahead of it in its
// lane to ask for their turns (a job that waits longer asks anyway).
const bookingWait = 2 * time.Second

// statusFresh is how long a batch check of a job's delivery status (as
// it is read) stands for the check before its send; a job that waited
// longer in this worker is checked again on its own.
const statusFresh = time.Second

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

// keep runs the heartbeat over the jobs this worker holds and takes over
// jobs other workers left (they stopped without settling them).
func (w *Worker) keep(ctx, sendCtx context.Context) {
	every := max(w.cfg.ClaimIdle/4, 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for p, ids := range w.held.byPartition(w.q.Partitions()) {
			for len(ids) > 0 {
				n := min(len(ids), 500)
				tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if err := w.q.Touch(tctx, p, w.name, ids[:n]); err != nil && ctx.Err() == nil {
					w.log.Warn("heartbeat over held jobs failed", "partition", p, "err", err)
				}
				cancel()
				ids = ids[n:]
			}
		}
		for p := range w.q.Partitions() {
			k := w.tryAcquire(readBatch)
			if k == 0 {
				break // no room: the next tick takes them over
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			msgs, err := w.q.Claim(cctx, p, w.name, w.cfg.ClaimIdle, k)
			cancel()
			w.release(k - len(msgs))
			if err != nil {
				if ctx.Err() == nil && !queue.IsNoGroup(err) {
					w.log.Warn("taking over abandoned jobs failed", "partition", p, "err", err)
				}
				continue
			}
			if len(msgs) > 0 {
				w.m.claimed.Add(float64(len(msgs)))
				w.log.Info("took over jobs a stopped worker held", "partition", p, "n", len(msgs))
			}
			fresh := msgs[:0]
			for _, m := range msgs {
				if w.held.has(m.Part, m.StreamID) {
					// Ours already (its heartbeat came late): one task is enough.
					w.release(1)
					continue
				}
				fresh = append(fresh, m)
			}
			w.acceptAll(ctx, sendCtx, fresh)
		}
	}
}

// schedule moves due retries from the retry sets to the streams, and
// sends one parked job of each failing webhook whose probe is due.
func (w *Worker) schedule(ctx context.Context) {
	t := time.NewTicker(moveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for p := range w.q.Partitions() {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if _, err := w.q.Probe(pctx, p, w.now(), w.probeEvery); err != nil && ctx.Err() == nil {
				w.log.Warn("probing parked webhooks failed", "partition", p, "err", err)
			}
			cancel()
			for ctx.Err() == nil {
				mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				n, err := w.q.MoveDue(mctx, p, w.now(), moveBatch)
				cancel()
				if err != nil {
					if ctx.Err() == nil {
						w.log.Warn("moving due retries failed", "partition", p, "err", err)
					}
					break
				}
				if n < moveBatch {
					break
				}
			}
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

// dispatcher runs sends: at most total at once, at most perEndpoint to one
// webhook, each webhook's further jobs waiting in a short backlog of its
// own, so a slow or dead receiver holds a few senders and never delays
// the others.
type dispatcher struct {
	w           *Worker
	slots       chan struct{}
	recSlots    chan struct{} // the recovery pool (recovered jobs hold one of these too)
	perEndpoint int
	backlog     int
	mu          sync.Mutex
	lanes       map[string]*lane
	wg          sync.WaitGroup
	stopping    atomic.Bool
}

type lane struct {
	inflight int
	queue    []*task
	latency  time.Duration // moving average of attempts
	// tickets is the next ticket to give; turn the first ticket whose job
	// has not asked for its turn yet (those before it all have); passed
	// holds tickets past turn whose jobs have; wake is closed when turn
	// moves.
	tickets, turn uint64
	passed        map[uint64]struct{}
	wake          chan struct{}
}

// newDispatcher: an endpoint's backlog holds up to half the jobs a worker
// may hold, so a burst to a few webhooks waits in memory (the readers stop
// when the worker holds its most), while one slow endpoint never takes
// every place.
func newDispatcher(w *Worker, total, perEndpoint, recovery int) *dispatcher {
	return &dispatcher{w: w, slots: make(chan struct{}, total), recSlots: make(chan struct{}, max(recovery, 1)), perEndpoint: perEndpoint,
		backlog: max(4*perEndpoint, heldPerSender*total/2), lanes: map[string]*lane{}}
}

// submit starts or queues t; false when its webhook's backlog is full.
func (d *dispatcher) submit(ctx context.Context, t *task) bool {
	id := t.msg.Job.Webhook
	d.mu.Lock()
	l := d.lanes[id]
	if l == nil {
		l = &lane{}
		d.lanes[id] = l
	}
	ticket := func() {
		if !t.msg.Job.Recovery {
			t.lane, t.ticket = l, l.tickets
			l.tickets++
		}
	}
	switch {
	case l.inflight < d.perEndpoint:
		ticket()
		l.inflight++
		d.wg.Add(1)
		d.mu.Unlock()
		if !t.msg.Job.Recovery {
			t.live = true
			d.w.live.begin(1)
		}
		go d.run(ctx, id, l, t)
		return true
	case len(l.queue) < d.backlog:
		ticket()
		l.queue = append(l.queue, t)
		d.mu.Unlock()
		return true
	}
	d.mu.Unlock()
	return false
}

// busyFor estimates when a webhook whose backlog is full has room again.
func (d *dispatcher) busyFor(id string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	est := time.Second
	if l := d.lanes[id]; l != nil && l.latency > 0 {
		est = l.latency * time.Duration(len(l.queue)+l.inflight) / time.Duration(d.perEndpoint)
	}
	return min(max(est, time.Second), 30*time.Second)
}

func (d *dispatcher) run(ctx context.Context, id string, l *lane, t *task) {
	defer d.wg.Done()
	for t != nil {
		if d.stopping.Load() {
			// Shutting down: leave queued jobs unsettled; they are taken over.
			d.settled(t)
			d.booked(t)
			d.w.rec.add(outcome{part: t.msg.Part, releaseOnly: t.msg.StreamID})
			t = d.next(id, l, 0)
			continue
		}
		recovered := t.msg.Job.Recovery
		d.awaitBooking(ctx, t)
		if !d.acquire(ctx, recovered) {
			// Shutting down: leave the job unsettled; it is taken over.
			d.settled(t)
			d.booked(t)
			d.w.rec.add(outcome{part: t.msg.Part, releaseOnly: t.msg.StreamID})
			t = d.next(id, l, 0)
			continue
		}
		d.settled(t)
		start := time.Now()
		d.deliver(ctx, t)
		d.booked(t) // if it went without asking for a turn
		<-d.slots
		if recovered {
			<-d.recSlots
		}
		t = d.next(id, l, time.Since(start))
	}
}

// awaitBooking waits until every job that reached t's lane before it has
// asked for its turn (or went without asking), at most bookingWait.
func (d *dispatcher) awaitBooking(ctx context.Context, t *task) {
	if t.lane == nil {
		return
	}
	timeout := time.NewTimer(bookingWait)
	defer timeout.Stop()
	for {
		d.mu.Lock()
		l := t.lane
		if l.turn >= t.ticket {
			d.mu.Unlock()
			return
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		d.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-timeout.C:
			return
		}
	}
}

// booked: t asked for its turn, or goes without asking; the jobs behind
// it in its lane may ask. Once per task; later calls do nothing.
func (d *dispatcher) booked(t *task) {
	if t.lane == nil || t.booked {
		return
	}
	t.booked = true
	d.mu.Lock()
	defer d.mu.Unlock()
	l := t.lane
	if t.ticket != l.turn {
		if l.passed == nil {
			l.passed = map[uint64]struct{}{}
		}
		l.passed[t.ticket] = struct{}{}
		return
	}
	l.turn++
	for {
		if _, ok := l.passed[l.turn]; !ok {
			break
		}
		delete(l.passed, l.turn)
		l.turn++
	}
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// settled: t's attempt starts (or it is let go), so it is no longer
// live work waiting.
func (d *dispatcher) settled(t *task) {
	if t.live {
		t.live = false
		d.w.live.end(1)
	}
}

// acquire takes a send slot, and for a recovered job first a slot of the
// recovery pool (a worker's recoveries send at most that many at once,
// whatever their number and their endpoints' concurrency) and then waits
// for the worker's live work to pause (at most recoveryYield), so
// recovered sends never crowd the CPU the live deliveries need. false
// when ctx ended.
func (d *dispatcher) acquire(ctx context.Context, recovered bool) bool {
	if recovered {
		select {
		case d.recSlots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		if !d.w.live.wait(ctx, recoveryYield) {
			<-d.recSlots
			return false
		}
	}
	select {
	case d.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		if recovered {
			<-d.recSlots
		}
		return false
	}
}

// deliver runs one task; a job whose delivery panics is put off for a
// minute (and logged) rather than taking the worker down on every try.
func (d *dispatcher) deliver(ctx context.Context, t *task) {
	defer func() {
		if r := recover(); r != nil {
			d.w.log.Error("a delivery panicked; its job waits a minute", "delivery", t.msg.Job.Delivery, "panic", fmt.Sprint(r))
			d.w.deferJob(t.msg, time.Minute, "error")
		}
	}()
	d.w.deliver(ctx, t)
}

// next pops the lane's next task, or retires the sender (nil).
func (d *dispatcher) next(id string, l *lane, took time.Duration) *task {
	d.mu.Lock()
	defer d.mu.Unlock()
	if took > 0 {
		l.latency = (3*l.latency + took) / 4
	}
	if len(l.queue) > 0 {
		t := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		return t
	}
	l.inflight--
	if l.inflight == 0 {
		delete(d.lanes, id)
	}
	return nil
}

// wait blocks until every started send is over.
func (d *dispatcher) wait() { d.wg.Wait() }

// inflight is how many tasks the dispatcher holds.
func (d *dispatcher) size() (inflight, queued int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		inflight += l.inflight
		queued += len(l.queue)
	}
	return inflight, queued
}

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
	cap := w.capOf(h)
	wait, ownOnly := slot(ctx, w.rdb, w.prefix, cap, h.host, h.id, rate, onOwn)
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
		wait, _ = slot(ctx, w.rdb, w.prefix, cap, h.host, h.id, rate, true)
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

// signing is what PrepareRetry needs to sign a retried request afresh.
type signing struct {
	signer *signature.Signer
	id     string
	body   []byte
}

type signingKey struct{}

// newRetryClient wraps the guarded client in go-retryablehttp: one quick
// retry of a request whose connection broke before an answer (a stale
// keep-alive connection), signed with a fresh timestamp; every other
// outcome, answer or not, is the attempt's and the schedule decides.
func newRetryClient(c *egress.Client) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = c.HTTP
	rc.Logger = nil
	rc.RetryMax = 1
	rc.RetryWaitMin, rc.RetryWaitMax = 50*time.Millisecond, 250*time.Millisecond
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			return false, nil
		}
		return brokenConnection(err), err
	}
	rc.Backoff = func(min, max time.Duration, attempt int, _ *http.Response) time.Duration {
		return retryablehttp.LinearJitterBackoff(min, max, attempt, nil) // never a receiver's Retry-After here
	}
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.PrepareRetry = func(req *http.Request) error {
		if s, ok := req.Context().Value(signingKey{}).(signing); ok {
			s.signer.Set(req.Header, s.id, time.Now(), s.body)
		}
		return nil
	}
	return rc
}

// brokenConnection: the connection was reset or closed under the request.
func brokenConnection(err error) bool {
	if errors.Is(err, egress.ErrBlocked) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

var userAgent = "attestd-webhooks/" + buildinfo.Version

// send makes the attempt: POST the body, signed, within the timeout;
// read at most a snippet of the answer.
func (w *Worker) send(ctx context.Context, h *hook, job *queue.Job) result {
	if tracing.Enabled() {
		return w.sendTraced(ctx, h, job)
	}
	return w.sendAttempt(ctx, h, job)
}

// sendTraced is send in a "webhook deliver" span, the child of the span
// that queued the job when the job carries one (Job.Trace); the request
// carries the span's traceparent to the receiver (see post).
func (w *Worker) sendTraced(ctx context.Context, h *hook, job *queue.Job) result {
	ctx = tracing.WithTraceparent(ctx, job.Trace)
	ctx, span := tracing.Start(ctx, "webhook deliver", trace.SpanKindProducer,
		attribute.String("attestd.webhook.id", job.Webhook), attribute.String("attestd.webhook.delivery", job.Delivery),
		attribute.String("attestd.webhook.event_type", job.Type), attribute.Int("attestd.webhook.attempt", job.Attempts+1))
	r := w.sendAttempt(ctx, h, job)
	if r.status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	}
	if !r.ok() {
		span.SetStatus(codes.Error, r.err)
	}
	span.End()
	return r
}

func (w *Worker) sendAttempt(ctx context.Context, h *hook, job *queue.Job) result {
	r := result{at: w.now()}
	ctx, cancel := context.WithTimeout(ctx, 2*w.cfg.Timeout+time.Second) // the client bounds each try
	defer cancel()
	start := time.Now()
	resp, why := w.post(ctx, h.url, signing{signer: h.signer, id: job.Delivery, body: []byte(job.Body)})
	if resp == nil {
		r.latency, r.err = time.Since(start), why
		return r
	}
	r.status = resp.StatusCode
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes)) // reuse the connection when the rest is short
	resp.Body.Close()
	r.latency = time.Since(start)
	r.snippet = cleanSnippet(snippet)
	if !r.ok() {
		r.err = fmt.Sprintf("the receiver answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if throttling(resp.StatusCode) {
			r.retryAfter = httpapi.ParseRetryAfter(resp.Header.Get("Retry-After"), r.at, maxRetryAfter)
		}
	}
	return r
}

// post sends s.body to url, signed as s (again on the client's retry);
// without an answer, why says why (the caller closes an answer's body).
func (w *Worker) post(ctx context.Context, url string, s signing) (resp *http.Response, why string) {
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, signingKey{}, s), http.MethodPost, url, s.body)
	if err != nil {
		return nil, "invalid request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	s.signer.Set(req.Header, s.id, time.Now(), s.body)
	if tracing.Enabled() {
		tracing.Inject(ctx, req.Header) // traceparent: the delivery's span
	}
	resp, err = w.client.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, describeError(err, w.cfg.Timeout)
	}
	return resp, ""
}

// describeError says why an attempt got no answer, without the URL (the
// log already names the webhook).
func describeError(err error, timeout time.Duration) string {
	var be *egress.BlockedError
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.As(err, &be):
		// Not the address: the log must not map names to private addresses.
		return cleanText("refused to connect: the host resolved to "+be.Reason+", which deliveries may not reach", maxErrorLen)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &ue):
		err = ue.Err
	}
	return cleanText(err.Error(), maxErrorLen)
}

// cleanSnippet keeps the printable, valid UTF-8 start of a response.
func cleanSnippet(b []byte) string { return cleanText(string(b), snippetBytes) }

// cleanText makes s storable and readable: valid UTF-8, no control
// characters but newlines and tabs, at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// throttling reports whether a status asks the sender to slow down
// (Standard Webhooks: 429, 502, 504; and 503): its Retry-After is honoured.
func throttling(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// pauses are the receivers that asked this worker to wait (Retry-After).
type pauses struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (p *pauses) set(id string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]time.Time{}
	}
	if len(p.m) > 10_000 {
		clear(p.m)
	}
	if until.After(p.m[id]) {
		p.m[id] = until
	}
}

// until reports how long id is still paused at now.
func (p *pauses) until(id string, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.m[id]
	if !ok {
		return 0, false
	}
	if !now.Before(u) {
		delete(p.m, id)
		return 0, false
	}
	return u.Sub(now), true
}
