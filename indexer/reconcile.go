package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/pause"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// Reconciliation lists a range of slots again and indexes every
// transaction of the program there that the store does not know (no rows)
// and this writer is not already handling (pending, or recently decided to
// leave no rows). Two ranges are reconciled:
//
//   - finalized: the last ReconcileWindow finalized slots up to where the
//     sync has listed, every ReconcileInterval. Whatever left a gap (a bug, a
//     restore, a transaction given up on), it is repaired here, once final.
//   - confirmed: from the finalized slot to where the sync has listed, with
//     every finality check. A fork at confirmed level can add a transaction below
//     the checkpoint, where the sync (which lists down to the checkpoint)
//     never looks.

// reconcileLoop reconciles the finalized window once the first sync has
// completed, then every ReconcileInterval.
func (ix *Indexer) reconcileLoop(ctx context.Context) {
	for !ix.caughtUp.Load() {
		if !pause.For(ctx, 100*time.Millisecond) {
			return
		}
	}
	for {
		for !ix.chainOK.Load() {
			if !pause.For(ctx, 100*time.Millisecond) {
				return
			}
		}
		if err := ix.reconcileFinalized(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("indexer reconciliation failed; will try again", "range", "finalized", "err", err)
		}
		if !pause.For(ctx, ix.cfg.ReconcileInterval) {
			return
		}
	}
}

// reconcileFinalized reconciles the finalized window.
func (ix *Indexer) reconcileFinalized(ctx context.Context) error {
	cp, has := ix.listedPos()
	if !has {
		return nil
	}
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	hi := min(finalSlot, cp.Slot)
	lo := uint64(0)
	if hi >= ix.cfg.ReconcileWindow {
		lo = hi - ix.cfg.ReconcileWindow + 1
	}
	return ix.reconcile(ctx, "finalized", lo, hi, rpc.CommitmentFinalized, finalSlot)
}

// reconcileConfirmed reconciles the slots after the finalized one up to
// the checkpoint.
func (ix *Indexer) reconcileConfirmed(ctx context.Context, finalSlot uint64) error {
	cp, has := ix.listedPos()
	if !has || cp.Slot <= finalSlot {
		return nil
	}
	return ix.reconcile(ctx, "confirmed", finalSlot+1, cp.Slot, rpc.CommitmentConfirmed, finalSlot)
}

func (ix *Indexer) reconcile(ctx context.Context, kind string, lo, hi uint64, c rpc.CommitmentType, finalSlot uint64) (err error) {
	return ix.reconcileFrom(ctx, kind, lo, hi, c, finalSlot, solana.Signature{})
}

// reconcileFrom is reconcile with the listing started before a known
// signature above hi (zero: at the newest).
func (ix *Indexer) reconcileFrom(ctx context.Context, kind string, lo, hi uint64, c rpc.CommitmentType, finalSlot uint64, before solana.Signature) (err error) {
	ix.reconciling.Lock()
	defer ix.reconciling.Unlock()
	defer func() {
		result := "ok"
		if err != nil {
			result = "error"
		}
		ix.m.reconciles.WithLabelValues(kind, result).Inc()
	}()
	entries, err := ix.listRange(ctx, lo, hi, c, before)
	if err != nil {
		return err
	}
	var cand []sigEntry
	var sigs []string
	for _, e := range entries {
		if !e.failed { // failed transactions leave nothing to store
			cand = append(cand, e)
			sigs = append(sigs, e.sig.String())
		}
	}
	known, err := ix.st.KnownTransactions(ctx, sigs)
	if err != nil {
		return err
	}
	var missing []sigEntry
	ix.mu.Lock()
	for i, e := range cand {
		if !known[sigs[i]] && ix.pending[e.sig] == nil && !ix.settled.has(e.sig) {
			missing = append(missing, e)
		}
	}
	ix.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	recs, err := ix.fetchChunk(ctx, missing, finalSlot, quickTries)
	if err != nil {
		return err
	}
	atts, err := ix.applyBelow(ctx, recs)
	if err != nil {
		return err
	}
	repaired, pending := 0, 0
	for _, r := range recs {
		if r.pending {
			pending++
		} else {
			repaired++
		}
	}
	ix.m.repairedTxs.WithLabelValues(kind).Add(float64(repaired))
	ix.m.repairedAtts.WithLabelValues(kind).Add(float64(atts))
	ix.log.Warn("indexer found program transactions missing from the store and indexed them", "range", kind,
		"fromSlot", lo, "toSlot", hi, "transactions", repaired, "attestations", atts, "pending", pending,
		"first", missing[0].sig.String())
	return nil
}

// applyBelow stores transactions found below the sync's listing position
// (no checkpoint), registers those getTransaction did not return as pending
// (not holding the checkpoint) and remembers those that leave no rows. It
// returns how many attestations were newly stored.
func (ix *Indexer) applyBelow(ctx context.Context, recs []*txRecords) (int, error) {
	atts := 0
	for _, b := range ix.batches(recs) {
		applied, err := ix.st.Apply(ctx, b.batch)
		if err != nil {
			return atts, err
		}
		atts += applied.Attestations
		ix.ingested.Add(int64(applied.Attestations))
		ix.m.attestations.Add(float64(applied.Attestations))
		ix.mu.Lock()
		for _, r := range b.pending {
			ix.addPendingLocked(r, false)
		}
		ix.rememberSettledLocked(b.settled)
		ix.mu.Unlock()
	}
	return atts, nil
}

// listRange lists the program's transactions in slots lo..hi at commitment
// c, newest first, paging getSignaturesForAddress from before (zero: the
// newest).
func (ix *Indexer) listRange(ctx context.Context, lo, hi uint64, c rpc.CommitmentType, before solana.Signature) ([]sigEntry, error) {
	var out []sigEntry
	limit := ix.cfg.PageSize
	for {
		cctx, cancel := ix.rpcCtx(ctx)
		page, err := ix.rpc.GetSignaturesForAddressWithOpts(cctx, ix.cfg.ProgramID, &rpc.GetSignaturesForAddressOpts{
			Limit: &limit, Before: before, Commitment: c})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("getSignaturesForAddress: %w", err)
		}
		for _, s := range page {
			if s.Slot < lo {
				return out, nil
			}
			if s.Slot <= hi {
				out = append(out, sigEntry{sig: s.Signature, slot: s.Slot, failed: s.Err != nil})
			}
		}
		if len(page) < limit {
			return out, nil
		}
		before = page[len(page)-1].Signature
	}
}
