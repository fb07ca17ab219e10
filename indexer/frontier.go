package indexer

import (
	"context"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// frontierStep bounds the slots one advance of the log's frontier checks
// against the chain (a rebuild from an empty database catches up in steps).
const frontierStep = 50_000

// advanceLogFrontier moves the log's frontier (store.LogFrontier) as far
// as the chain lets it: to the newest slot at or below the finalized one
// and the head checkpoint such that every program transaction the chain
// lists as finalized up to it is stored, none is still pending, and no
// attestation up to it waits for finality. The log appends only up to the
// frontier, in slot, signature and event order, so a database rebuilt by
// indexing the same chain again appends the same leaves at the same
// indexes, whatever order transactions were indexed in.
func (ix *Indexer) advanceLogFrontier(ctx context.Context, finalSlot uint64) error {
	from, _, err := ix.st.LogFrontier(ctx)
	if err != nil {
		return err
	}
	hi := min(finalSlot, ix.headSlot.Load(), from+frontierStep)
	if hi <= from {
		return nil
	}
	// Slots this process already checked against the chain's finalized
	// listing stay checked (a finalized transaction does not go away):
	// only newer ones are listed, while a pending or unfinalized
	// attestation holds the frontier back.
	lo := max(from, ix.frontierChecked.Load()) + 1
	if lo <= hi {
		// The listing starts just above hi, not at the chain's newest.
		var before solana.Signature
		if sig, ok, err := ix.st.TransactionAfter(ctx, hi); err != nil {
			return err
		} else if ok {
			if before, err = solana.SignatureFromBase58(sig); err != nil {
				return fmt.Errorf("stored signature %q: %w", sig, err)
			}
		}
		if err := ix.reconcileFrom(ctx, "frontier", lo, hi, rpc.CommitmentFinalized, finalSlot, before); err != nil {
			return err
		}
		ix.frontierChecked.Store(hi)
	}
	if s, ok, err := ix.st.LowestUnfinalizedSlot(ctx); err != nil {
		return err
	} else if ok && s <= hi {
		hi = s - 1
	}
	ix.mu.Lock()
	for _, p := range ix.pending {
		if p.entry.slot > 0 && p.entry.slot <= hi {
			hi = p.entry.slot - 1
		}
	}
	ix.mu.Unlock()
	if hi <= from {
		return nil
	}
	if err := ix.st.AdvanceLogFrontier(ctx, hi); err != nil {
		return err
	}
	ix.m.frontier.Set(float64(hi))
	return nil
}
