package webhook

import (
	"context"
	"time"

	"github.com/attestd/attestd/internal/webhook/queue"
)

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
