package translog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/store"
)

// Coming back from a backup (docs/operations.md, Restore). A database
// restored from a backup holds an older log than the one its witnesses
// cosigned; the chain refills the attestations it lost and, the order
// being the chain's (docs/log.md, Order), the appender regrows the very
// same leaves. It must never sign (and no node serve) a checkpoint
// smaller than what the witnesses hold: that is a rollback to them and
// to every client that kept a proof. So at the start of each term the
// appender asks every witness what it cosigned (an add-checkpoint of the
// newest checkpoint it has, from that size: the witness cosigns it again
// when it is the size it holds, or answers 409 with the size it holds),
// records the largest as the log's witnessed size, appends no further
// than that size while it regrows, signs nothing on the way, and signs
// exactly at that size: each witness then checks the regrown root against
// the root it cosigned (same size, so the roots must be equal) before it
// cosigns, and only then does any node serve it.

// askWitnesses learns the largest size the witnesses cosigned and records
// it, trying again (with a growing pause) until an attempt is done. It
// returns an error only when ctx ends.
func (a *Appender) askWitnesses(ctx context.Context, t *leadTerm) error {
	backoff := time.Duration(0)
	for {
		done, err := a.askOnce(ctx, t)
		if done {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			a.log.Warn("log appender: cannot ask the witnesses what they cosigned; will try again", "err", err)
		}
		backoff = min(max(witnessBackoffMin, backoff*2), 5*time.Second)
		if !pause.For(ctx, backoff) {
			return context.Cause(ctx)
		}
	}
}

// askOnce is one attempt: the witnesses asked, the largest size recorded
// when the log is below it, and the term's floor set (a restore's hold
// ended). While the database is held by a restore it is done only once
// every witness answered (a witness that did not may hold the largest
// size; nothing is appended meanwhile); otherwise what answered is enough
// (the cosigner learns the rest as it goes).
func (a *Appender) askOnce(ctx context.Context, t *leadTerm) (done bool, err error) {
	hold, err := a.opt.Store.ReadLogHold(ctx)
	if err != nil {
		return false, err
	}
	held := !hold.HeldSince.IsZero()
	answered, largest, err := a.probeWitnesses(ctx, t.cos, held)
	if err != nil {
		return false, err
	}
	if largest > hold.Size && largest > hold.WitnessedSize {
		if err := a.opt.Store.RaiseLogWitnessedSize(ctx, largest); err != nil {
			return false, err
		}
		hold.WitnessedSize = largest
	}
	if held && answered < len(a.opt.Config.Witnesses) {
		a.log.Warn("log held after a restore: not every witness answered what it cosigned; asking again",
			"answered", answered, "witnesses", len(a.opt.Config.Witnesses))
		return false, nil
	}
	if held {
		if err := a.opt.Store.ReleaseLogHold(ctx); err != nil {
			return false, err
		}
	}
	t.floor = hold.WitnessedSize
	a.m.behind.Set(float64(max(0, hold.WitnessedSize-hold.Size)))
	if hold.Size < hold.WitnessedSize {
		a.log.Warn("log regrowing from the chain to the size its witnesses cosigned; no checkpoint is served until then",
			"size", hold.Size, "witnessed_size", hold.WitnessedSize)
	}
	return true, nil
}

// probeWitnesses asks every witness, side by side, which size it holds:
// how many answered, and the largest size.
func (a *Appender) probeWitnesses(ctx context.Context, cos *cosigner, held bool) (answered int, largest int64, err error) {
	cp, ok, err := a.opt.Store.LatestLogCheckpoint(ctx, a.opt.Config.Origin())
	if err != nil {
		return 0, 0, err
	}
	if !ok && !held {
		// A new log: nothing to ask with, and nothing to learn (a witness
		// that holds more answers the first checkpoint with its size).
		return 0, 0, nil
	}
	if !ok {
		// An empty database held for a rebuild (attestd log hold): the
		// empty tree's checkpoint is what is asked with. Signing it is
		// safe: a witness that holds more refuses it with its size.
		if cp, _, err = a.SignCheckpoint(ctx); err != nil {
			return 0, 0, err
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range cos.witness {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size, ok := a.probe(ctx, cos, w, cp)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				answered++
				largest = max(largest, size)
			}
		}()
	}
	wg.Wait()
	return answered, largest, nil
}

// probe asks one witness: the size it holds, and whether it said.
func (a *Appender) probe(ctx context.Context, cos *cosigner, w Witness, cp store.LogCheckpoint) (int64, bool) {
	size, err := cos.submit(ctx, w, cp, cp.Size)
	var conflict *witnessConflict
	switch {
	case err == nil:
		return size, true
	case errors.As(err, &conflict):
		return conflict.size, true
	}
	level := slog.LevelWarn
	var r *witnessRefusal
	if errors.As(err, &r) {
		level = slog.LevelError
	}
	a.log.Log(ctx, level, "log witness did not say which size it cosigned", "witness", w.Name, "err", err)
	return 0, false
}

// appendMax is how many queued attestations the next append may take:
// the batch, and no further than the witnessed size while the log
// regrows to it (so that exactly that size is signed).
func (t *leadTerm) appendMax(batch int) int {
	if t.size < t.floor {
		return int(min(int64(batch), t.floor-t.size))
	}
	return batch
}

// regrowing reports whether the log is still below what its witnesses
// cosigned: nothing is signed then.
func (t *leadTerm) regrowing() bool { return t.size < t.floor }

// releaseUnwitnessed ends a restore's hold on a log without witnesses:
// nobody outside holds the size it was at, so there is nothing to ask,
// and it says so (docs/operations.md: a log without witnesses may show
// clients a smaller checkpoint after a restore, until it regrows).
func (a *Appender) releaseUnwitnessed(ctx context.Context) error {
	for {
		hold, err := a.opt.Store.ReadLogHold(ctx)
		if err == nil && hold.HeldSince.IsZero() {
			return nil
		}
		if err == nil {
			if err = a.opt.Store.ReleaseLogHold(ctx); err == nil {
				a.log.Warn("log restored from a backup and no witnesses configured (ATTESTD_LOG_WITNESSES): nothing outside knows the size it was at; serving from the restored size while the chain refills it",
					"size", hold.Size)
				return nil
			}
		}
		if ctx.Err() == nil {
			a.log.Warn("log appender: cannot read or release the log's hold; will try again", "err", err)
		}
		if !pause.For(ctx, a.opt.Config.Poll) {
			return context.Cause(ctx)
		}
	}
}

// regrowReason says why a regrowing log serves no checkpoint.
func regrowReason(origin string, h store.LogHold) string {
	if h.Size < h.WitnessedSize {
		return fmt.Sprintf("log %s is regrowing from the chain after a restore: %d of the %d leaves its witnesses cosigned are back; no older checkpoint is served", origin, h.Size, h.WitnessedSize)
	}
	return fmt.Sprintf("log %s regrew to the %d leaves its witnesses cosigned after a restore; it is served again once they cosign it", origin, h.WitnessedSize)
}
