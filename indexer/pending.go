package indexer

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// A transaction getSignaturesForAddress lists but getTransaction does not
// return (behind a load-balanced RPC, a lagging backend is ordinary) is
// pending: retried with backoff, first after PendingRetry, the delay
// doubling up to PendingMaxBackoff. After PendingTimeout the chain is asked
// whether it still knows the signature: if not, a fork dropped it; if so,
// the retries go on at the longest delay, no longer holding the checkpoint.
//
// A pending transaction the sync listed holds the checkpoint just before
// it, so it survives a crash or a change of writer without any record of
// its own: the next writer lists from the checkpoint and meets it again.
// The transactions after it are stored all the same (readers see them at
// once); only the checkpoint waits, and a restart re-applies them, which
// stores nothing twice. While one is pending, the index reports itself
// complete only up to the slot before it (head checkpoint, /health).
//
// Pending transactions found below the checkpoint (by a reconciliation or
// a re-inclusion after a fork) do not hold it; were one lost in a crash,
// the reconciliation of the finalized window finds it again.

// pendingTx is a transaction waiting for getTransaction to return it.
type pendingTx struct {
	entry     sigEntry
	holds     bool              // listed by the sync: holds the checkpoint
	pred      *store.Checkpoint // the checkpoint just before it (holds; nil: before everything)
	seq       uint64            // order of registration (the sync's listing order)
	firstSeen time.Time
	attempts  int
	next      time.Time
}

// pendingBatch bounds the pending transactions retried per pass.
const pendingBatch = 256

// addPendingLocked registers r as pending (keeping the schedule of one
// already registered). The caller holds ix.mu.
func (ix *Indexer) addPendingLocked(r *txRecords, holds bool) {
	if p, ok := ix.pending[r.entry.sig]; ok {
		if holds && !p.holds {
			p.holds, p.pred = true, r.pred
		}
		return
	}
	now := time.Now()
	ix.pendSeq++
	ix.pending[r.entry.sig] = &pendingTx{entry: r.entry, holds: holds, pred: r.pred, seq: ix.pendSeq,
		firstSeen: now, next: now.Add(ix.cfg.PendingRetry)}
	ix.m.pending.Set(float64(len(ix.pending)))
}

// oldestHoldingLocked is the first-listed pending transaction that holds
// the checkpoint (nil when none does). The caller holds ix.mu.
func (ix *Indexer) oldestHoldingLocked() *pendingTx {
	var oldest *pendingTx
	for _, p := range ix.pending {
		if p.holds && (oldest == nil || p.seq < oldest.seq) {
			oldest = p
		}
	}
	return oldest
}

// durableLocked is the checkpoint to save once the sync has stored up to
// listed: listed itself, or the one just before the oldest pending
// transaction the sync listed. ok is false when that is before everything
// (no checkpoint may be saved). The caller holds ix.mu.
func (ix *Indexer) durableLocked(listed *store.Checkpoint) (store.Checkpoint, bool) {
	if p := ix.oldestHoldingLocked(); p != nil {
		if p.pred == nil {
			return store.Checkpoint{}, false
		}
		return *p.pred, true
	}
	if listed == nil {
		return store.Checkpoint{}, false
	}
	return *listed, true
}

// saveDurable saves the checkpoint when pending transactions resolved
// since the last batch let it move, and returns the current one.
func (ix *Indexer) saveDurable(ctx context.Context) (store.Checkpoint, error) {
	ix.mu.Lock()
	var listed *store.Checkpoint
	if ix.hasListed {
		l := ix.listed
		listed = &l
	}
	cp, ok := ix.durableLocked(listed)
	cur, has := ix.cp, ix.hasCP
	ix.mu.Unlock()
	if !ok || (has && cp.Slot == cur.Slot && cp.Signature == cur.Signature) {
		return cur, nil
	}
	if err := ix.st.SaveCheckpoint(ctx, cp); err != nil {
		return cur, fmt.Errorf("save checkpoint: %w", err)
	}
	ix.mu.Lock()
	ix.cp, ix.hasCP = cp, true
	ix.mu.Unlock()
	return cp, nil
}

// rememberSettledLocked notes transactions decided to leave no rows, so a
// reconciliation does not fetch them again. The caller holds ix.mu.
func (ix *Indexer) rememberSettledLocked(recs []*txRecords) {
	for _, r := range recs {
		ix.settled.add(r.entry.sig)
	}
}

// pendingLoop retries due pending transactions.
func (ix *Indexer) pendingLoop(ctx context.Context) {
	t := time.NewTicker(min(ix.cfg.PendingRetry, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !ix.chainOK.Load() {
			continue
		}
		if err := ix.retryPending(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("indexer pending retry failed; will try again", "err", err)
		}
	}
}

// backoff is the delay before retry number n (1, 2, ...).
func (ix *Indexer) backoff(n int) time.Duration {
	d := ix.cfg.PendingRetry
	for i := 1; i < n && d < ix.cfg.PendingMaxBackoff; i++ {
		d *= 2
	}
	return min(d, ix.cfg.PendingMaxBackoff)
}

// retryPending makes one attempt at every due pending transaction.
func (ix *Indexer) retryPending(ctx context.Context) error {
	now := time.Now()
	ix.mu.Lock()
	var due []*pendingTx
	for _, p := range ix.pending {
		if !p.next.After(now) {
			due = append(due, p)
		}
	}
	ix.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	sort.Slice(due, func(i, j int) bool { return due[i].seq < due[j].seq })
	due = due[:min(len(due), pendingBatch)]
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	entries := make([]sigEntry, len(due))
	for i, p := range due {
		entries[i] = p.entry
	}
	recs, err := ix.fetchChunk(ctx, entries, finalSlot, 1)
	if err != nil {
		return err
	}
	var found []*txRecords
	var expired []*pendingTx
	ix.mu.Lock()
	for i, r := range recs {
		p := due[i]
		if !r.pending {
			found = append(found, r)
			continue
		}
		ix.m.pendingTries.Inc()
		p.attempts++
		if now.Sub(p.firstSeen) >= ix.cfg.PendingTimeout {
			expired = append(expired, p)
			p.next = now.Add(ix.cfg.PendingMaxBackoff) // until decided below
			continue
		}
		p.next = now.Add(ix.backoff(p.attempts))
	}
	ix.mu.Unlock()
	if err := ix.resolve(ctx, found, "indexed"); err != nil {
		return err
	}
	if len(found) > 0 {
		ix.log.Info("indexer fetched pending transactions at last", "transactions", len(found), "first", found[0].entry.sig.String())
	}
	if len(expired) > 0 {
		return ix.expirePending(ctx, expired, now)
	}
	return nil
}

// resolve stores decided pending transactions and forgets them (which may
// let the checkpoint move: the sync saves it).
func (ix *Indexer) resolve(ctx context.Context, recs []*txRecords, outcome string) error {
	if len(recs) == 0 {
		return nil
	}
	for _, b := range ix.batches(recs) {
		applied, err := ix.st.Apply(ctx, b.batch)
		if err != nil {
			return err
		}
		ix.ingested.Add(int64(applied.Attestations))
		ix.m.attestations.Add(float64(applied.Attestations))
	}
	ix.mu.Lock()
	for _, r := range recs {
		delete(ix.pending, r.entry.sig)
		if r.settledEmpty() {
			ix.settled.add(r.entry.sig)
		}
	}
	ix.m.pending.Set(float64(len(ix.pending)))
	ix.mu.Unlock()
	ix.m.pendingDone.WithLabelValues(outcome).Add(float64(len(recs)))
	ix.Trigger()
	return nil
}

// expirePending decides the pending transactions retried for
// PendingTimeout: gone from the chain (a fork dropped them) or, when the
// chain still knows them, retried on at the longest delay.
func (ix *Indexer) expirePending(ctx context.Context, expired []*pendingTx, now time.Time) error {
	sigs := make([]solana.Signature, len(expired))
	for i, p := range expired {
		sigs[i] = p.entry.sig
	}
	cctx, cancel := ix.rpcCtx(ctx)
	st, err := ix.rpc.GetSignatureStatuses(cctx, true, sigs...)
	cancel()
	if err != nil {
		return fmt.Errorf("getSignatureStatuses: %w", err)
	}
	if len(st.Value) != len(sigs) {
		return fmt.Errorf("getSignatureStatuses: %d statuses for %d signatures", len(st.Value), len(sigs))
	}
	var gone, failed []*txRecords
	for i, p := range expired {
		switch s := st.Value[i]; {
		case s == nil:
			gone = append(gone, &txRecords{entry: p.entry, skipped: "vanished"})
		case s.Err != nil:
			failed = append(failed, &txRecords{entry: p.entry, skipped: "failed"})
		default:
			// Retry on, but stop holding the checkpoint: a node that never
			// returns one transaction must not freeze the index. Were the
			// writer to stop now, the finalized reconciliation would find it.
			ix.mu.Lock()
			released := p.holds
			p.holds = false
			ix.mu.Unlock()
			ix.log.Warn("the chain knows a transaction getTransaction still does not return; retrying",
				"signature", p.entry.sig.String(), "slot", p.entry.slot, "pendingFor", now.Sub(p.firstSeen).Round(time.Second).String(),
				"attempts", p.attempts, "checkpointReleased", released)
			if released {
				ix.Trigger()
			}
		}
	}
	if err := ix.resolve(ctx, failed, "failed"); err != nil {
		return err
	}
	if len(gone) > 0 {
		ix.mu.Lock()
		for _, r := range gone {
			delete(ix.pending, r.entry.sig)
		}
		ix.m.pending.Set(float64(len(ix.pending)))
		ix.mu.Unlock()
		ix.m.skipped.WithLabelValues("vanished").Add(float64(len(gone)))
		ix.m.pendingDone.WithLabelValues("vanished").Add(float64(len(gone)))
		ix.log.Warn("listed transactions the chain no longer knows: dropped by a fork", "transactions", len(gone),
			"first", gone[0].entry.sig.String(), "retriedFor", ix.cfg.PendingTimeout.String())
		ix.Trigger()
	}
	return nil
}

// sigSet is a bounded set of signatures; past its size the oldest go.
type sigSet struct {
	max  int
	m    map[solana.Signature]struct{}
	ring []solana.Signature
	next int
}

func newSigSet(max int) *sigSet { return &sigSet{max: max, m: map[solana.Signature]struct{}{}} }

func (s *sigSet) add(sig solana.Signature) {
	if _, ok := s.m[sig]; ok {
		return
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, sig)
	} else {
		delete(s.m, s.ring[s.next])
		s.ring[s.next] = sig
		s.next = (s.next + 1) % s.max
	}
	s.m[sig] = struct{}{}
}

func (s *sigSet) has(sig solana.Signature) bool { _, ok := s.m[sig]; return ok }
