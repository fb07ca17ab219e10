package verifier

import (
	"context"
	"fmt"

	"github.com/attestd/attestd/internal/excerpt"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// chainState is what the chain says of a sent payment transaction.
type chainState int

const (
	// stateInFlight: not landed, and its blockhash may still let it land.
	stateInFlight chainState = iota
	// stateLanded: confirmed without error: the payer paid.
	stateLanded
	// stateFailed: landed with an error: the transfer did not happen.
	stateFailed
	// stateExpired: not landed, and the chain is past its last valid
	// block height: it never will.
	stateExpired
)

// chainCheck asks a Solana RPC about payment transactions.
type chainCheck struct{ rpc *rpc.Client }

// state reads the block height first, then the signature's status: a
// transaction that landed did so at or before its last valid height, so
// once the height is past it a missing status is final. lastValid 0 means
// unknown (the answer is never stateExpired).
func (c chainCheck) state(ctx context.Context, sig solana.Signature, lastValid uint64) (chainState, string, error) {
	height, err := c.blockHeight(ctx)
	if err != nil {
		return stateInFlight, "", fmt.Errorf("get block height: %w", err)
	}
	return c.stateAt(ctx, sig, lastValid, height)
}

// stateAt is state with the block height read before (by the caller, at
// any earlier moment: an older height only delays stateExpired).
func (c chainCheck) stateAt(ctx context.Context, sig solana.Signature, lastValid, height uint64) (chainState, string, error) {
	sctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	st, err := c.rpc.GetSignatureStatuses(sctx, true, sig)
	cancel()
	if err != nil {
		return stateInFlight, "", fmt.Errorf("get signature status: %w", err)
	}
	if st != nil && len(st.Value) == 1 && st.Value[0] != nil {
		v := st.Value[0]
		if v.Err != nil {
			return stateFailed, "the payment transaction failed on chain (" + excerpt.Of(fmt.Sprint(v.Err), 160) + "); not charged", nil
		}
		if v.ConfirmationStatus == rpc.ConfirmationStatusConfirmed || v.ConfirmationStatus == rpc.ConfirmationStatusFinalized {
			return stateLanded, "", nil
		}
		return stateInFlight, "", nil
	}
	if lastValid > 0 && height > lastValid {
		return stateExpired, fmt.Sprintf("the payment transaction never landed (block height %d is past its last valid height %d); not charged", height, lastValid), nil
	}
	return stateInFlight, "", nil
}

// blockHeight is the confirmed block height.
func (c chainCheck) blockHeight(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return c.rpc.GetBlockHeight(ctx, rpc.CommitmentConfirmed)
}
