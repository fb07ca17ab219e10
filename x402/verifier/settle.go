package verifier

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Releases of an unsettled payment: each step has its own deadline (not
// the request's, which may be what ran out); one that fails is retried in
// the background, from releaseFirstRetry doubling to releaseMaxWait, for
// ReplayTTL, so the same payment can be presented again once the store
// is back, well before its blockhash expires (60 to 90 s). Past that the
// reconciler releases the row when the chain says the transaction can no
// longer land.
const (
	releaseTimeout    = 2 * time.Second
	releaseFirstRetry = 100 * time.Millisecond
	releaseMaxWait    = 2 * time.Second
	// maxLateReleases bounds the releases retried at once: past it (a
	// long outage under many paid requests) the reconciler has the rest.
	maxLateReleases = 1024
)

// release is what is left to undo of one claim.
type release struct {
	ledgerID int64 // 0: the ledger holds nothing to release (or it is done)
	hash     [32]byte
	guard    bool // the Redis claim is still to be given back
}

// unclaim gives the Redis claim back and, when the ledger holds the
// payment, marks it released: nothing was charged. What fails is retried
// in the background.
func (v *Verifier) unclaim(p *Payment, ledger bool) {
	r := &release{hash: p.Checked.MessageHash, guard: true}
	if ledger {
		r.ledgerID = p.ledgerID
	}
	if err := v.releaseOnce(r); err != nil {
		if v.lateReleases.Add(1) > maxLateReleases {
			v.lateReleases.Add(-1)
			v.log.Error("payment release failed, and too many are retried already; the reconciler releases it once its transaction can no longer land",
				"id", r.ledgerID, "err", err)
			v.m.releaseRetries.WithLabelValues("abandoned").Inc()
			return
		}
		v.log.Warn("payment release failed; retrying in the background", "id", r.ledgerID, "err", err)
		v.wg.Add(1)
		go v.releaseLater(r)
	}
}

// releaseOnce tries what is left of r: first the ledger's row (a guard
// given back while the row still says pending would admit nothing), then
// the Redis claim.
func (v *Verifier) releaseOnce(r *release) error {
	if r.ledgerID != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		err := v.ledger.FinishPayment(ctx, r.ledgerID, store.PaymentReleased, "", "the answer was an error; not charged")
		cancel()
		if err != nil {
			return fmt.Errorf("ledger: release payment %d: %w", r.ledgerID, err)
		}
		r.ledgerID = 0
	}
	if r.guard {
		if err := v.guard.release(context.Background(), r.hash); err != nil { // the guard's own timeout
			return fmt.Errorf("replay guard: release claim: %w", err)
		}
		r.guard = false
	}
	return nil
}

// releaseLater retries r until it is done, the verifier closes or
// ReplayTTL has passed.
func (v *Verifier) releaseLater(r *release) {
	defer v.wg.Done()
	defer v.lateReleases.Add(-1)
	id := r.ledgerID
	until := time.Now().Add(ReplayTTL)
	t := time.NewTimer(releaseFirstRetry)
	defer t.Stop()
	for wait := releaseFirstRetry; ; wait = min(2*wait, releaseMaxWait) {
		t.Reset(wait)
		select {
		case <-v.closed:
			v.log.Warn("payment release abandoned at shutdown; the reconciler releases it", "id", id)
			v.m.releaseRetries.WithLabelValues("abandoned").Inc()
			return
		case <-t.C:
		}
		err := v.releaseOnce(r)
		if err == nil {
			v.log.Info("payment released after a retry", "id", id)
			v.m.releaseRetries.WithLabelValues("released").Inc()
			return
		}
		if time.Now().After(until) {
			v.log.Error("payment release abandoned; the reconciler releases it once its transaction can no longer land", "id", id, "err", err)
			v.m.releaseRetries.WithLabelValues("abandoned").Inc()
			return
		}
	}
}

// Release gives a payment back unsettled: the handler answered an error,
// so nothing is charged and the same payment may be presented again.
func (v *Verifier) Release(p *Payment) {
	if p == nil || p.done {
		return
	}
	p.done = true
	v.m.released.Inc()
	v.unclaim(p, true)
}

// Settle charges the payment. On success the answer may be released with
// the returned PAYMENT-RESPONSE; on failure it must not be (the claim is
// kept: the transaction may still land).
func (v *Verifier) Settle(ctx context.Context, p *Payment) (x402.SettleResponse, *Refusal) {
	if tracing.Enabled() {
		ctx, span := tracing.Start(ctx, "x402 settle", trace.SpanKindInternal, attribute.String("x402.route", p.Path))
		resp, ref := v.settle(ctx, p)
		if ref != nil {
			span.SetAttributes(attribute.String("x402.refusal", ref.Reason))
			tracing.End(span, ref)
			return resp, ref
		}
		span.SetAttributes(attribute.String("x402.transaction", resp.Transaction))
		span.End()
		return resp, nil
	}
	return v.settle(ctx, p)
}

func (v *Verifier) settle(ctx context.Context, p *Payment) (x402.SettleResponse, *Refusal) {
	p.done = true
	resp := x402.SettleResponse{Network: v.cfg.Network.CAIP2, Payer: p.Payer(), Amount: p.Requirements.Amount}
	if p.V1 {
		resp.Network = v.cfg.Network.Name
	}
	start := time.Now()
	sig, status, ref := v.s.settle(ctx, p)
	v.m.settle.Observe(time.Since(start).Seconds())
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if ref != nil {
		v.m.failed.WithLabelValues(ref.Reason).Inc()
		v.log.Warn("settlement not done", "route", p.Path, "payer", p.Payer(), "status", status, "reason", ref.Reason, "err", ref.Message)
		var err error
		switch status {
		case store.PaymentPending:
			err = v.ledger.NotePayment(lctx, p.ledgerID, ref.Reason+": "+ref.Message)
		case store.PaymentReleased:
			err = v.ledger.FinishPayment(lctx, p.ledgerID, store.PaymentReleased, "", ref.Message)
			if gerr := v.guard.release(lctx, p.Checked.MessageHash); gerr != nil {
				v.log.Warn("replay guard: release claim", "err", gerr)
			}
		default:
			err = v.ledger.FinishPayment(lctx, p.ledgerID, store.PaymentFailed, p.txSig, ref.Reason+": "+ref.Message)
		}
		if err != nil {
			v.log.Error("ledger: record unsettled payment", "id", p.ledgerID, "status", status, "err", err)
		}
		resp.ErrorReason = ref.Reason
		out := challenge(ref.Reason, "the payment could not be settled, so the answer is withheld: "+ref.Message)
		return resp, out
	}
	resp.Success, resp.Transaction = true, sig
	v.m.settled.WithLabelValues(p.Path).Inc()
	v.m.settledUnits.Add(float64(p.Amount))
	if err := v.ledger.FinishPayment(lctx, p.ledgerID, store.PaymentSettled, sig, ""); err != nil {
		// The money moved: the answer is owed. The row stays pending for
		// the reconciler, which finds the transaction on chain.
		v.log.Error("ledger: record settlement", "id", p.ledgerID, "tx", sig, "err", err)
	}
	p.txSig = sig
	v.attachReceipt(lctx, p, &resp)
	return resp, nil
}

// attachReceipt puts the payment's signed receipt in resp: the stored one
// for a payment presented again, else a new one, kept in the ledger (the
// first kept wins, so the same payment always shows the same receipt).
// A receipt that cannot be made or kept is logged; the answer, paid for,
// still leaves.
func (v *Verifier) attachReceipt(ctx context.Context, p *Payment, resp *x402.SettleResponse) {
	if v.signer == nil {
		return
	}
	jws := p.receipt
	if jws == "" {
		pl := receipt.Payload{Amount: p.Requirements.Amount, Asset: p.Requirements.Asset, IssuedAt: v.now().Unix(),
			Network: v.cfg.Network.CAIP2, Payer: p.Payer(), PayTo: p.Requirements.PayTo, RequestDigest: hex.EncodeToString(p.fingerprint),
			ResourceURL: p.Resource.URL, ResponseDigest: p.answer, Transaction: p.txSig, Version: receipt.Version}
		signed, err := v.signer.Sign(pl)
		if err != nil {
			v.log.Error("receipt: sign", "tx", p.txSig, "err", err)
			return
		}
		jws = signed
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		kept, err := v.ledger.SaveReceipt(sctx, p.ledgerID, signed)
		cancel()
		if err != nil {
			v.log.Warn("receipt: keep in the ledger", "id", p.ledgerID, "tx", p.txSig, "err", err)
		} else {
			jws = kept
		}
	}
	b, err := json.Marshal(receipt.Wrap(jws))
	if err != nil {
		return
	}
	resp.Extensions = map[string]json.RawMessage{receipt.Extension: b}
}
