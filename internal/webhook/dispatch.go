package webhook

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// bookingWait bounds how long a job waits for the jobs ahead of it in its
// lane to ask for their turns (a job that waits longer asks anyway).
const bookingWait = 2 * time.Second

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
