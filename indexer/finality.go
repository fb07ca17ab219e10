package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// finalityLoop promotes confirmed rows to finalized, removes rows of
// transactions a fork dropped, and reconciles the unfinalized slots below
// the checkpoint, every FinalityInterval.
func (ix *Indexer) finalityLoop(ctx context.Context) {
	t := time.NewTicker(ix.cfg.FinalityInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !ix.chainOK.Load() {
			continue // no sync has seen the chain at or past the checkpoint yet
		}
		if err := ix.finalizeOnce(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("indexer finality check failed", "err", err)
		}
		if err := ix.checkConfirmedRange(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("indexer reconciliation failed; will try again", "range", "confirmed", "err", err)
			continue
		}
		if err := ix.frontierOnce(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("indexer could not move the log's frontier; will try again", "err", err)
		}
	}
}

// checkConfirmedRange reconciles the unfinalized slots below the
// checkpoint, where a confirmed-level fork can add a transaction.
func (ix *Indexer) checkConfirmedRange(ctx context.Context) error {
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	return ix.reconcileConfirmed(ctx, finalSlot)
}

// finalizeOnce decides every stored confirmed transaction whose slot the
// chain has finalized: finalized on chain at the same slot, it is
// promoted; unknown to the node (or failed), a fork dropped it and its
// rows go; finalized at another slot (re-included after a fork), its rows
// are replaced.
func (ix *Indexer) finalizeOnce(ctx context.Context) error {
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	const page = 256
	for {
		refs, err := ix.st.ConfirmedTransactions(ctx, page)
		if err != nil {
			return err
		}
		var decidable []store.TxRef
		for _, r := range refs {
			if r.Slot <= finalSlot {
				decidable = append(decidable, r)
			}
		}
		if len(decidable) == 0 {
			return nil
		}
		sigs := make([]solana.Signature, len(decidable))
		for i, r := range decidable {
			if sigs[i], err = solana.SignatureFromBase58(r.Signature); err != nil {
				return fmt.Errorf("stored signature %q: %w", r.Signature, err)
			}
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
		var final, gone []string
		var moved []sigEntry
		for i, s := range st.Value {
			ref := decidable[i]
			switch {
			case s == nil || s.Err != nil:
				gone = append(gone, ref.Signature)
			case s.Slot != ref.Slot:
				gone = append(gone, ref.Signature)
				moved = append(moved, sigEntry{sig: sigs[i], slot: s.Slot})
			case s.ConfirmationStatus == rpc.ConfirmationStatusFinalized:
				final = append(final, ref.Signature)
			}
		}
		if len(final) > 0 {
			if _, err := ix.st.Finalize(ctx, final); err != nil {
				return err
			}
			ix.m.finalized.Add(float64(len(final)))
		}
		if len(gone) > 0 {
			n, err := ix.st.RemoveTransactions(ctx, gone)
			if err != nil {
				return err
			}
			ix.m.forked.Add(float64(len(gone) - len(moved)))
			ix.log.Warn("indexer removed transactions dropped by a fork", "transactions", len(gone)-len(moved),
				"reincluded", len(moved), "rows", n)
		}
		if len(moved) > 0 {
			recs, err := ix.fetchChunk(ctx, moved, finalSlot, quickTries)
			if err != nil {
				return err
			}
			if _, err := ix.applyBelow(ctx, recs); err != nil {
				return err
			}
		}
		if len(final)+len(gone) == 0 || len(refs) < page {
			return nil
		}
	}
}

// frontierOnce moves the log's frontier up to the chain's finalized slot.
func (ix *Indexer) frontierOnce(ctx context.Context) error {
	finalSlot, err := ix.getSlot(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return err
	}
	return ix.advanceLogFrontier(ctx, finalSlot)
}
