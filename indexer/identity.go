package indexer

import (
	"context"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go/rpc"
)

// StartOverFlag is the `attestd index` flag that lets the indexer start
// over on a chain other than the one the database was indexed from.
const StartOverFlag = "--start-over"

// ChainMismatchError says the RPC node serves another chain than the one
// the database was indexed from (another genesis hash): the indexer does
// not write to it unless told to start over.
type ChainMismatchError struct {
	Recorded string // genesis hash recorded with the checkpoint
	Chain    string // genesis hash the RPC node answers
}

func (e *ChainMismatchError) Error() string {
	return fmt.Sprintf("the RPC node serves the chain with genesis hash %s, but this database was indexed from the chain with genesis hash %s: "+
		"point ATTESTD_SOLANA_RPC_URL at that chain, or run `attestd index %s` to forget the checkpoint and index this chain (indexed rows stay)",
		e.Chain, e.Recorded, StartOverFlag)
}

// IsChainMismatch reports whether err is (or wraps) a ChainMismatchError.
func IsChainMismatch(err error) bool {
	var m *ChainMismatchError
	return errors.As(err, &m)
}

// chainBehind is the reason the index is not synced while the chain's slot
// is below the checkpoint (a reset validator, a restarted simulator).
func chainBehind(chainSlot, checkpoint uint64) string {
	return fmt.Sprintf("the chain is at slot %d, behind the indexer's checkpoint at slot %d (a reset or different chain with the same genesis?): "+
		"the indexer writes nothing until the chain passes slot %d; to index this chain from its start instead, run `attestd index %s`",
		chainSlot, checkpoint, checkpoint, StartOverFlag)
}

// otherGenesis is /health's reason for a ChainMismatchError.
func otherGenesis(recorded, chain string) string {
	return fmt.Sprintf("the chain's genesis hash is %s, but this database was indexed from genesis %s: the indexer writes nothing; "+
		"point ATTESTD_SOLANA_RPC_URL at that chain, or run `attestd index %s` to index this one",
		chain, recorded, StartOverFlag)
}

// genesisHash asks the RPC node for its chain's genesis hash.
func (ix *Indexer) genesisHash(ctx context.Context) (string, error) {
	cctx, cancel := ix.rpcCtx(ctx)
	defer cancel()
	h, err := ix.rpc.GetGenesisHash(cctx)
	if err != nil {
		return "", fmt.Errorf("getGenesisHash: %w", err)
	}
	return h.String(), nil
}

// checkChain runs at the start of each term, before the checkpoint is
// loaded: it records the chain's genesis hash when none is recorded and
// refuses (a ChainMismatchError) a chain with another one. With StartOver,
// a chain with another genesis, or whose slot is behind the checkpoint, is
// taken as the chain to follow: the checkpoint is forgotten and the next
// sync starts from the program's first transaction.
func (ix *Indexer) checkChain(ctx context.Context) error {
	chain, recorded, ok, err := ix.genesisPair(ctx)
	if err != nil {
		return err
	}
	differs := ok && recorded != chain
	if !differs && ix.cfg.StartOver {
		behind, err := ix.chainBehindCheckpoint(ctx)
		if err != nil {
			return err
		}
		differs = behind
	}
	switch {
	case differs && ix.cfg.StartOver:
		if err := ix.st.StartOver(ctx, ix.cfg.Checkpoint, chain, ix.cfg.Checkpoint, ix.headName()); err != nil {
			return err
		}
		ix.log.Warn("indexer starts over on this chain: checkpoint forgotten, indexed rows kept", "genesis", chain, "previous", recorded)
		return nil
	case differs:
		return &ChainMismatchError{Recorded: recorded, Chain: chain}
	case !ok:
		got, err := ix.st.RecordChainGenesis(ctx, ix.cfg.Checkpoint, chain)
		if err != nil {
			return err
		}
		if got != chain {
			return &ChainMismatchError{Recorded: got, Chain: chain}
		}
		ix.log.Info("indexer recorded the chain it follows", "genesis", chain)
	}
	return nil
}

// chainBehindCheckpoint reports whether the chain's confirmed slot is
// below the stored checkpoint's.
func (ix *Indexer) chainBehindCheckpoint(ctx context.Context) (bool, error) {
	var done uint64
	for _, name := range []string{ix.cfg.Checkpoint, ix.headName()} {
		cp, ok, err := ix.st.Checkpoint(ctx, name)
		if err != nil {
			return false, err
		}
		if ok {
			done = max(done, cp.Slot)
		}
	}
	if done == 0 {
		return false, nil
	}
	slot, err := ix.getSlot(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return false, err
	}
	return chainIsBehind(slot, done, ix.cfg.SyncedLagSlots), nil
}

// headName is the head checkpoint's name.
func (ix *Indexer) headName() string {
	if ix.cfg.Checkpoint == CheckpointName {
		return HeadCheckpointName
	}
	return ix.cfg.Checkpoint + ":head"
}

// genesisPair is the RPC node's genesis hash and the one recorded with
// the checkpoint (ok false: none recorded yet).
func (ix *Indexer) genesisPair(ctx context.Context) (chain, recorded string, ok bool, err error) {
	if chain, err = ix.genesisHash(ctx); err != nil {
		return "", "", false, err
	}
	recorded, ok, err = ix.st.ChainGenesis(ctx, ix.cfg.Checkpoint)
	return chain, recorded, ok, err
}

// sameChain re-checks, at each sync, that the RPC node still serves the
// recorded chain (a validator reset under a running indexer).
func (ix *Indexer) sameChain(ctx context.Context) error {
	chain, recorded, ok, err := ix.genesisPair(ctx)
	if err != nil {
		return err
	}
	if ok && recorded != chain {
		return &ChainMismatchError{Recorded: recorded, Chain: chain}
	}
	return nil
}

// waitForChain is a sync while the chain's slot is below the newest
// indexed transaction's: nothing is written and the status says why; the
// indexer goes on polling until the chain passes the checkpoint.
func (ix *Indexer) waitForChain(chainSlot, checkpoint uint64) {
	ix.chainOK.Store(false)
	why := chainBehind(chainSlot, checkpoint)
	ix.mu.Lock()
	ix.status.Synced, ix.status.ChainSlot, ix.status.NotSynced = false, chainSlot, why
	ix.status.LastIndexedSlot = max(ix.status.LastIndexedSlot, checkpoint)
	ix.mu.Unlock()
	if !ix.waiting.Swap(true) {
		ix.log.Warn("indexer waits: "+why, "chainSlot", chainSlot, "checkpointSlot", checkpoint)
	}
}
