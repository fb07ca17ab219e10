package verifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
)

// presentedBefore handles a payment the ledger knows: settled, it gets
// the answer it bought for the request it bought (done with the kept
// answer) and is refused for any other; pending or failed, the chain is
// asked now: landed, it is settled and its kept answer given; never
// landing, it is released and treated as new (the chain then refuses it);
// still in flight, it is refused as in flight. A released payment, or
// none, is not done (released tells which).
func (v *Verifier) presentedBefore(ctx context.Context, req Request, p *Payment) (out outcome, done, released bool) {
	hash := p.Checked.MessageHash
	var row store.Payment
	err := store.ErrNotFound
	if p.paymentID != "" {
		row, err = v.ledger.PaymentByID(ctx, p.paymentID)
		switch {
		case err == nil && row.MessageHash != hash:
			return outcome{ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonReplayed, Challenge: true,
				Message: "this payment identifier was used for another payment; use a new identifier for a new payment"}}, true, false
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return v.ledgerDown(err), true, false
		}
	}
	if err != nil { // no row found by identifier (or none sent): by message
		row, err = v.ledger.PaymentByMessage(ctx, hash)
	}
	if errors.Is(err, store.ErrNotFound) {
		return outcome{}, false, false
	}
	if err != nil {
		return v.ledgerDown(err), true, false
	}
	if row.Recovered && row.Status == store.PaymentSettled {
		return answerLost(row), true, false
	}
	if row.Status != store.PaymentReleased {
		// Bought (or being bought) for one request: never another's.
		if len(row.RequestFingerprint) == 0 || !bytes.Equal(row.RequestFingerprint, req.Fingerprint) {
			bought := row.Request
			if bought == "" {
				bought = row.Route
			}
			return outcome{ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonReplayed, Challenge: true,
				Message: fmt.Sprintf("this payment was used for another request (%s, with its parameters); presented again it answers only that one; sign a new payment for this request", excerpt.Of(bought, 200))}}, true, false
		}
	}
	switch row.Status {
	case store.PaymentSettled:
		return v.keptAnswer(ctx, row, p), true, false
	case store.PaymentPending, store.PaymentFailed:
		sig, serr := solana.SignatureFromBase58(row.TxSignature)
		if serr != nil {
			if row.Status == store.PaymentPending && v.now().Sub(row.UpdatedAt) < staleClaim {
				// Claimed, its transaction not known yet: being verified
				// or settled by a facilitator.
				return inUse(), true, false
			}
			return outcome{ref: replayed()}, true, false
		}
		st, reason, cerr := v.s.check(ctx, sig, row.LastValidHeight)
		if cerr != nil {
			if !errors.Is(cerr, errNoChain) {
				v.log.Warn("cannot ask the chain about a presented payment", "tx", row.TxSignature, "err", cerr)
			}
			return pendingRefusal(row), true, false
		}
		switch st {
		case stateLanded:
			if err := v.ledger.FinishPayment(ctx, row.ID, store.PaymentSettled, row.TxSignature, ""); err != nil {
				v.log.Error("ledger: record late settlement", "id", row.ID, "tx", row.TxSignature, "err", err)
			}
			return v.keptAnswer(ctx, row, p), true, false
		case stateFailed, stateExpired:
			if err := v.ledger.FinishPayment(ctx, row.ID, store.PaymentReleased, "", reason); err != nil {
				v.log.Error("ledger: release payment", "id", row.ID, "err", err)
			}
			return outcome{}, false, true
		}
		return pendingRefusal(row), true, false
	}
	return outcome{}, false, row.Status == store.PaymentReleased
}

func (v *Verifier) ledgerDown(err error) outcome {
	v.log.Error("payments ledger unavailable", "err", err)
	return outcome{ref: unavailable(ReasonLedgerDown, "cannot read the payments ledger now (the database is unavailable); nothing was charged; try again shortly")}
}

// pendingRefusal: the payment's settlement is not decided yet (its first
// request may still be answering).
func pendingRefusal(row store.Payment) outcome {
	if row.Status == store.PaymentFailed && row.TxSignature == "" {
		return outcome{ref: replayed()}
	}
	return outcome{inflight: true, ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonReplayed,
		Challenge: true, RetryAfter: 2,
		Message: "this payment's settlement is still pending on chain; present it again in a few seconds: once it lands it gets the answer it bought (no new charge), and if it never lands it is not charged"}}
}

// staleClaim: a pending row without a transaction signature not touched
// for this long belongs to a request that will not finish (its node
// stopped): it is no longer "in use".
const staleClaim = 5 * time.Minute

// inUse: another request holds the payment now (it is being verified,
// answered or settled).
func inUse() outcome {
	return outcome{inflight: true, ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonReplayed,
		Challenge: true, RetryAfter: 2,
		Message: "this payment is in use by a request still being answered; present it again in a few seconds: once that request is answered, the same payment gets the same answer (no new charge)"}}
}

// answerLost: a payment the ledger recovered from the chain after a
// restore was settled, and so answered, before the database it was kept
// in was lost. Its answer is gone and what it bought is not known: it is
// refused, never charged again (its transfer landed once; the ledger row
// keeps it from being claimed again), and never given a new answer (one
// payment buys one answer).
func answerLost(row store.Payment) outcome {
	return outcome{ref: &Refusal{Status: http.StatusConflict, Code: apierror.CodePaymentReplayed, Reason: ReasonAnswerLost, Challenge: true,
		Message: fmt.Sprintf("this payment was settled on chain (transaction %s) and answered before this service restored its database from an older backup, which lost the answer kept for it; it is not charged again, and one payment buys one answer, never a new one: sign a new payment for this request", row.TxSignature)}}
}
