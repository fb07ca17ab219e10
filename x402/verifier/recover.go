package verifier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// Settlements recovered from the chain (docs/operations.md, Restore). A
// database restored from an older backup lost the ledger rows of the
// payments settled since; their transfers to payTo are on chain. The
// reconciler lists payTo's token accounts' finalized transactions from
// the newest it checked (a cursor in the database, restored with it, so
// the lost stretch is listed again), reads each one the ledger does not
// hold as an `exact` payment, and records it settled and recovered: the
// ledger again equals the chain. A recovered payment presented again is
// never charged again and gets no new answer (presented.go).

// RecoverLedger is the part of the store the recovery uses.
type RecoverLedger interface {
	RecoveryCursor(ctx context.Context, account string) (signature string, slot uint64, ok bool, err error)
	SaveRecoveryCursor(ctx context.Context, account, signature string, slot uint64) error
	PaymentByTransaction(ctx context.Context, txSignature string) (store.Payment, error)
	RecoverPayment(ctx context.Context, p store.Payment, settledAt time.Time) (bool, error)
	OldestOpenPayment(ctx context.Context) (time.Duration, error)
}

// recoverPage is the getSignaturesForAddress page size.
const recoverPage = 1000

// recovery is the reconciler's settlement recovery for one payTo.
type recovery struct {
	ledger  RecoverLedger
	rpc     *rpc.Client
	terms   x402.ExactTerms
	network string // CAIP-2, as the ledger records it
}

// accounts are payTo's associated token accounts of the asset, under
// Token and Token-2022 (a payment goes to the one of its mint's program).
func (r *recovery) accounts() []solana.PublicKey {
	return []solana.PublicKey{r.terms.Destination(solana.TokenProgramID), r.terms.Destination(solana.Token2022ProgramID)}
}

// run recovers what each account's new transactions settled: how many
// payments it added to the ledger.
func (rc *Reconciler) recoverSettlements(ctx context.Context) (int, error) {
	total := 0
	for _, acct := range rc.rec.accounts() {
		n, err := rc.recoverAccount(ctx, acct)
		total += n
		if err != nil {
			return total, fmt.Errorf("recover settlements to %s: %w", acct, err)
		}
	}
	return total, nil
}

func (rc *Reconciler) recoverAccount(ctx context.Context, acct solana.PublicKey) (int, error) {
	r := rc.rec
	cursor, _, has, err := r.ledger.RecoveryCursor(ctx, acct.String())
	if err != nil {
		return 0, err
	}
	var until solana.Signature
	if has {
		if until, err = solana.SignatureFromBase58(cursor); err != nil {
			return 0, fmt.Errorf("recovery cursor %q: %w", cursor, err)
		}
	}
	sigs, err := rc.listSince(ctx, acct, until)
	if err != nil || len(sigs) == 0 {
		return 0, err
	}
	if len(sigs) > recoverPage {
		rc.log.Info("payments recovery: checking the transactions to payTo since the last one checked", "account", acct.String(), "transactions", len(sigs))
	}
	added := 0
	for i := len(sigs) - 1; i >= 0; i-- { // oldest first: the cursor moves forward only past what was checked
		s := sigs[i]
		if s.Err == nil {
			ok, err := rc.recoverTx(ctx, s)
			if err != nil {
				return added, err
			}
			if ok {
				added++
			}
		}
		if i%100 == 0 {
			if err := r.ledger.SaveRecoveryCursor(ctx, acct.String(), s.Signature.String(), s.Slot); err != nil {
				return added, err
			}
		}
	}
	return added, nil
}

// listSince lists acct's finalized transactions newer than until (all
// when until is zero), newest first.
func (rc *Reconciler) listSince(ctx context.Context, acct solana.PublicKey, until solana.Signature) ([]*rpc.TransactionSignature, error) {
	var out []*rpc.TransactionSignature
	var before solana.Signature
	limit := recoverPage
	for {
		cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		page, err := rc.rec.rpc.GetSignaturesForAddressWithOpts(cctx, acct, &rpc.GetSignaturesForAddressOpts{
			Limit: &limit, Before: before, Until: until, Commitment: rpc.CommitmentFinalized})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("getSignaturesForAddress: %w", err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out, nil
		}
		before = page[len(page)-1].Signature
	}
}

// recoverTx records the payment s settled when the ledger does not hold
// it; it reports whether it added one.
func (rc *Reconciler) recoverTx(ctx context.Context, s *rpc.TransactionSignature) (bool, error) {
	r := rc.rec
	if _, err := r.ledger.PaymentByTransaction(ctx, s.Signature.String()); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	res, err := r.rpc.GetTransaction(cctx, s.Signature, &rpc.GetTransactionOpts{
		Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentFinalized, MaxSupportedTransactionVersion: &maxTxVersion})
	cancel()
	if err != nil {
		return false, fmt.Errorf("getTransaction %s: %w", s.Signature, err)
	}
	if res == nil || res.Transaction == nil || res.Meta == nil || res.Meta.Err != nil {
		return false, nil
	}
	tx, err := x402.DecodeTransaction(res.Transaction.GetBinary())
	if err != nil {
		return false, nil // not a transaction a payment could be
	}
	tr, err := x402.ReadTransfer(tx, &r.terms)
	if err != nil {
		rc.log.Debug("payments recovery: a transaction to payTo that is not a payment", "tx", s.Signature.String(), "err", err)
		return false, nil
	}
	at := time.Now()
	if res.BlockTime != nil {
		at = res.BlockTime.Time()
	}
	added, err := r.ledger.RecoverPayment(ctx, store.Payment{MessageHash: tr.MessageHash, TxSignature: s.Signature.String(),
		Network: r.network, Asset: r.terms.Asset.String(), PayTo: r.terms.PayTo.String(), Payer: tr.Payer.String(), Amount: tr.Amount}, at)
	if err != nil {
		return false, err
	}
	if added {
		rc.m.recovered.Inc()
		rc.m.recoveredUnits.Add(float64(tr.Amount))
		rc.log.Warn("payment recovered from the chain: settled, and missing from the ledger (a database restored from an older backup?)",
			"tx", s.Signature.String(), "payer", tr.Payer.String(), "amount", tr.Amount, "slot", s.Slot)
	}
	return added, nil
}

var maxTxVersion uint64 = 0
