package webhook

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/pause"
)

// Pace constants.
const (
	// paceWindow is the control window: every window, the live
	// deliveries' commit-to-attempt latency of the window is compared
	// with the reference and the recovery rate adjusted.
	paceWindow = 200 * time.Millisecond
	// paceSettle is how long after this worker's last recovery ended the
	// live latency counts as the reference again.
	paceSettle = 2 * time.Second
	// paceDefaultRef is the reference before one was measured (a worker
	// that starts with recoveries to run).
	paceDefaultRef = 10 * time.Millisecond
	// paceSlack: the live latency may grow by 50%, or by this much when
	// that is more, before the recoveries slow down. Measured with the
	// bench (p99 commit to arrival): 5 ms gave 3,100-3,900/s at 1.9x-2.3x
	// the live p99, 3 ms 1,570-1,830/s at 1.75x-1.9x, 4 ms 2,217-3,134/s
	// at 1.9x-2.0x.
	paceSlack = 4 * time.Millisecond
	// paceMinSamples is the fewest live deliveries in a window that say
	// anything; with fewer, nothing is adjusted (no live deliveries to
	// protect: the rate grows).
	paceMinSamples = 5
	// paceStep is how many steps per second a recovery takes. Smaller,
	// more frequent batches cost more per delivery (a transaction each)
	// and, measured, hurt the live latency more than they smooth it: 50
	// steps gave 1,183/s at 2.6x the live p99, 5 steps 3,837/s at 1.9x.
	paceStep = 5
	// paceMinBatch is the smallest batch worth a transaction (the rate,
	// not the batch, keeps a slow pace).
	paceMinBatch = 100
)

// pace is the rate at which all of a worker's recoveries together queue
// deliveries again, driven by the live deliveries' latency: the 90th
// percentile of the commit-to-attempt latency of the live deliveries
// this worker started in the last window, against the same measured
// while it ran no recovery (the reference). Above 1.5x the reference (or
// the reference + paceSlack) the rate drops by 15%; below, it grows by a
// twenty-fifth of the maximum per window. Every worker paces its own
// recoveries by the live latency it sees.
type pace struct {
	mu       sync.Mutex
	min, max float64
	rate     float64 // deliveries per second
	tokens   float64
	refilled time.Time
	running  int       // recoveries running on this worker
	ended    time.Time // the last one ended
	window   []time.Duration
	started  time.Time // of the window
	ref      time.Duration
	// log, when set, hears each window's verdict while recoveries run.
	log func(rate float64, p90, target time.Duration, n int)
}

func newPace(lo, hi, start int) *pace {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return &pace{min: float64(lo), max: float64(hi), rate: float64(min(max(lo, start), hi))}
}

// begin and end count the worker's running recoveries.
func (p *pace) begin() {
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
}

func (p *pace) end(now time.Time) {
	p.mu.Lock()
	p.running = max(p.running-1, 0)
	p.ended = now
	p.mu.Unlock()
}

// observe records one live delivery's commit-to-attempt latency and, at
// the end of a window, adjusts the rate.
func (p *pace) observe(d time.Duration, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.window) < 4096 {
		p.window = append(p.window, max(d, 0))
	}
	p.control(now)
}

// control closes the window when it is over (p.mu held).
func (p *pace) control(now time.Time) {
	if p.started.IsZero() {
		p.started = now
		return
	}
	if now.Sub(p.started) < paceWindow {
		return
	}
	n := len(p.window)
	var p90 time.Duration
	if n >= paceMinSamples {
		slices.Sort(p.window)
		p90 = p.window[(n*9)/10]
	}
	p.window, p.started = p.window[:0], now
	if p.running == 0 {
		if n >= paceMinSamples && now.Sub(p.ended) > paceSettle {
			if p.ref == 0 {
				p.ref = p90
			} else {
				p.ref = (7*p.ref + p90) / 8
			}
		}
		return
	}
	if n < paceMinSamples || p90 <= p.target() {
		p.rate = min(p.rate+p.max/25, p.max)
	} else {
		p.rate = max(p.rate*0.85, p.min)
	}
	if p.log != nil {
		p.log(p.rate, p90, p.target(), n)
	}
}

// target is the live latency the recoveries keep (p.mu held).
func (p *pace) target() time.Duration {
	ref := p.ref
	if ref <= 0 {
		ref = paceDefaultRef
	}
	return max(ref*3/2, ref+paceSlack)
}

// step is how many deliveries one recovery's next batch takes: its share
// of a fifth of a second at the current rate, within limit (the
// recovery's own rate, per step).
func (p *pace) step(limit int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	share := int(p.rate / float64(paceStep*max(p.running, 1)))
	return max(1, min(limit, max(share, paceMinBatch)))
}

// take waits until the rate allows n more deliveries; false when ctx ended.
func (p *pace) take(ctx context.Context, n int) bool {
	for {
		p.mu.Lock()
		now := time.Now()
		p.control(now) // windows without live deliveries close too
		if !p.refilled.IsZero() {
			p.tokens += now.Sub(p.refilled).Seconds() * p.rate
		}
		p.refilled = now
		// At most a step's worth saved up: no burst after a pause.
		p.tokens = min(p.tokens, max(float64(n), p.rate/paceStep))
		if p.tokens >= float64(n) {
			p.tokens -= float64(n)
			p.mu.Unlock()
			return true
		}
		wait := time.Duration((float64(n) - p.tokens) / p.rate * float64(time.Second))
		p.mu.Unlock()
		if !pause.For(ctx, max(wait, time.Millisecond)) {
			return false
		}
	}
}

// current is the rate now (deliveries per second), for tests and logs.
func (p *pace) current() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}
