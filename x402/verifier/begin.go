package verifier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Request is a payable request as the middleware saw it. The strings must
// be the caller's own copies.
type Request struct {
	Path        string // route path below /api/v1, as registered
	ResourceURL string
	PaymentV2   string // PAYMENT-SIGNATURE
	PaymentV1   string // X-PAYMENT
	// Fingerprint is the SHA-256 of what the request asks for (method,
	// path, canonical query, body digest: see Fingerprint); Described is
	// the same for people (method and path). A settled payment presented
	// again is answered again only for the same fingerprint.
	Fingerprint []byte
	Described   string
}

// Payment is a verified, claimed payment waiting for its answer.
type Payment struct {
	Path         string
	V1           bool
	Requirements x402.Requirements
	Resource     x402.ResourceInfo
	Tx           *x402.Transaction
	Checked      *x402.Checked
	Amount       uint64

	signed    []byte // self-settled: the co-signed wire transaction
	txSig     string
	lastValid uint64 // block height after which the transaction cannot land (0: unknown)
	paymentID string // the payment-identifier extension's id
	ledgerID  int64
	// fingerprint is the request's; answer the SHA-256 of the answer
	// body (hex), set by Keep; receipt the stored receipt of a settled
	// payment presented again.
	fingerprint []byte
	answer      string
	receipt     string
	done        bool
	// kept: a settled payment presented again for the request it bought
	// gets the answer it bought (answers.go), nothing is charged, and no
	// handler runs.
	kept *Kept
}

// Payer is the paying wallet.
func (p *Payment) Payer() string { return p.Checked.Payer.String() }

// Begin verifies the payment a request carries and claims it; the
// request's handler may run when it returns a Payment. A request without a
// payment is refused with the challenge (ReasonMissing). Every Payment must
// end with Settle or Release.
//
// A payment presented while its first request is still being answered
// (on any node) waits up to inflightWait for that answer, then is refused
// with 409 and a Retry-After.
func (v *Verifier) Begin(ctx context.Context, req Request) (*Payment, *Refusal) {
	if tracing.Enabled() {
		return v.beginTraced(ctx, req)
	}
	return v.beginPayment(ctx, req)
}

// beginTraced is Begin in an "x402 verify" span.
func (v *Verifier) beginTraced(ctx context.Context, req Request) (*Payment, *Refusal) {
	ctx, span := tracing.Start(ctx, "x402 verify", trace.SpanKindInternal, attribute.String("x402.route", req.Path))
	p, ref := v.beginPayment(ctx, req)
	if ref != nil {
		span.SetAttributes(attribute.String("x402.refusal", ref.Reason))
		tracing.End(span, ref)
		return p, ref
	}
	span.SetAttributes(attribute.String("x402.payer", p.Payer()), attribute.Bool("x402.replay", p.kept != nil))
	span.End()
	return p, nil
}

func (v *Verifier) beginPayment(ctx context.Context, req Request) (*Payment, *Refusal) {
	deadline := time.Now().Add(inflightWait)
	r := v.begin(ctx, req)
	for r.inflight && time.Now().Add(inflightPoll).Before(deadline) {
		select {
		case <-ctx.Done():
		case <-time.After(inflightPoll):
			r = v.begin(ctx, req)
			continue
		}
		break
	}
	p, ref := r.p, r.ref
	if ref != nil {
		v.count(ref)
		return nil, ref
	}
	if p.kept != nil {
		v.m.replays.WithLabelValues(req.Path).Inc()
	} else {
		v.m.paid.WithLabelValues(req.Path).Inc()
	}
	return p, nil
}

type outcome struct {
	p   *Payment
	ref *Refusal
	// inflight: refused because the payment's first request is still
	// being answered (worth looking again shortly).
	inflight bool
}

// begin is one look at a payment: it is decoded, judged by what it bought
// when presented before, checked against today's terms, then claimed.
func (v *Verifier) begin(ctx context.Context, req Request) outcome {
	rt, ok := v.routes[req.Path]
	if !ok {
		return outcome{ref: unavailable(ReasonNotReady, "this route is not payable")}
	}
	if req.PaymentV2 == "" && req.PaymentV1 == "" {
		if _, _, _, ref := v.offer(req.Path, req.ResourceURL); ref != nil {
			return outcome{ref: ref}
		}
		return outcome{ref: rt.missingRef}
	}
	start := time.Now()
	p, payload, network, ref := decodePayment(req, rt)
	if ref != nil {
		return outcome{ref: ref}
	}
	// A payment presented before is judged by what it bought, before
	// anything of today is asked of it: settled, it gets its answer for
	// the request it bought (whatever the price, fee payer or blockhash
	// hint now); pending or failed, the chain says.
	out, done, released := v.presentedBefore(ctx, req, p)
	if done {
		return out
	}
	// A payment never seen (or released, never charged): today's terms.
	if ref := v.checkTerms(req, rt, p, payload, network, start); ref != nil {
		return outcome{ref: ref}
	}
	return v.claim(ctx, req, rt, p, released)
}

// decodePayment decodes the request's payment header (PAYMENT-SIGNATURE,
// else X-PAYMENT) and its transaction, and finds its payer (the
// transaction's first signer, whose signature it checks). payload is a
// v2 payment's, network a v1 payment's.
func decodePayment(req Request, rt *route) (p *Payment, payload *x402.PaymentPayload, network string, ref *Refusal) {
	p = &Payment{Path: req.Path, Amount: rt.amount, fingerprint: req.Fingerprint, Resource: x402.ResourceInfo{URL: req.ResourceURL}}
	var raw []byte
	if req.PaymentV2 != "" {
		pl, tx, err := x402.DecodePaymentV2(req.PaymentV2)
		if err != nil {
			return nil, nil, "", fromCheck(err)
		}
		id, err := x402.PaymentIdentifier(pl)
		if err != nil {
			return nil, nil, "", fromCheck(err)
		}
		payload, p.paymentID, raw = pl, id, tx
	} else {
		p.V1 = true
		pl, tx, err := x402.DecodePaymentV1(req.PaymentV1)
		if err != nil {
			return nil, nil, "", fromCheck(err)
		}
		network, raw = pl.Network, tx
	}
	tx, err := x402.DecodeTransaction(raw)
	if err != nil {
		return nil, nil, "", fromCheck(err)
	}
	payer, hash, serr := x402.Signed(tx)
	if serr != nil {
		return nil, nil, "", fromCheck(serr)
	}
	p.Tx, p.Checked = tx, &x402.Checked{Payer: payer, MessageHash: hash}
	return p, payload, network, nil
}

// checkTerms checks p against what the route asks today (the offer a v2
// payload accepted, or a v1 payment's network, and the transaction
// itself: CheckExact), recording the requirements in p; start is when
// the payment's decoding began (the local check's latency).
func (v *Verifier) checkTerms(req Request, rt *route, p *Payment, payload *x402.PaymentPayload, network string, start time.Time) *Refusal {
	_, q, res, ref := v.offer(req.Path, req.ResourceURL)
	if ref != nil {
		return ref
	}
	p.Requirements, p.Resource = q, res
	if payload != nil {
		if ref := otherResource(payload.Resource, req.ResourceURL); ref != nil {
			return ref
		}
		if !q.Match(payload.Accepted) {
			return challenge(x402.ReasonRequirementsMismatch, "payment refused: its accepted requirements (scheme, network, amount, asset, payTo, feePayer) are not this route's; pay what the PAYMENT-REQUIRED header asks")
		}
	} else if network != v.cfg.Network.Name {
		return challenge(x402.ReasonInvalidNetwork, fmt.Sprintf("payment refused: network %q is not %q", excerpt.Of(network, 40), v.cfg.Network.Name))
	}
	terms := rt.terms
	terms.FeePayer, _ = solana.PublicKeyFromBase58(q.Extra.FeePayer)
	checked, cerr := x402.CheckExact(p.Tx, &terms)
	v.m.local.Observe(time.Since(start).Seconds())
	if cerr != nil {
		return fromCheck(cerr)
	}
	p.Checked = checked
	return nil
}

// claim makes the checked payment p this request's: one payment, one
// answer. It claims the message in Redis (fast, shared by the fleet),
// checks it against the chain, then claims it in the ledger (durable). A
// released row (released) is claimed again in the ledger alone (its Redis
// claim may outlive its release by a process without Redis).
func (v *Verifier) claim(ctx context.Context, req Request, rt *route, p *Payment, released bool) outcome {
	checked, q := p.Checked, p.Requirements
	claimed, gerr := true, error(nil)
	if !released {
		claimed, gerr = v.guard.claim(ctx, checked.MessageHash, v.node)
	}
	if gerr != nil {
		v.m.replayRedis.Inc()
		v.log.Warn("replay guard unavailable; the ledger decides alone", "err", gerr)
		claimed = true
	}
	if !claimed {
		return inUse()
	}
	if ref := v.s.verify(ctx, p); ref != nil {
		v.unclaim(p, false)
		return outcome{ref: ref}
	}
	id, lerr := v.ledger.ClaimPayment(ctx, store.Payment{MessageHash: checked.MessageHash, TxSignature: p.txSig,
		Network: v.cfg.Network.CAIP2, Asset: q.Asset, PayTo: q.PayTo, Payer: checked.Payer.String(), Amount: rt.amount,
		Route: req.Path, Node: v.node, RequestFingerprint: req.Fingerprint, Request: req.Described, PaymentID: p.paymentID,
		LastValidHeight: p.lastValid})
	if errors.Is(lerr, store.ErrPaymentUsed) {
		// Another request holds it (Redis forgot, or did not answer).
		return inUse()
	}
	if lerr != nil {
		v.log.Error("payments ledger unavailable", "err", lerr)
		v.unclaim(p, false)
		return outcome{ref: unavailable(ReasonLedgerDown, "cannot record the payment now (the database is unavailable); nothing was charged; try again shortly")}
	}
	p.ledgerID = id
	return outcome{p: p}
}

// otherResource refuses (400, before anything is claimed) a payment whose
// payload names a resource other than this request's: a payment is bound
// to the resource it names. Its url must be this request's resource URL
// byte for byte, as the node's configured public origin and the request's
// path make it and as the 402 gave it (clients echo the 402's resource
// object): no normalization, so no other spelling of a path, host, case,
// slash or escape is taken for this one. A payload that names none (no
// resource, or one without a url: v1, and clients that leave it out) is
// not refused.
func otherResource(named *x402.ResourceInfo, resource string) *Refusal {
	if named == nil || named.URL == "" || named.URL == resource {
		return nil
	}
	return malformed(ReasonOtherResource, fmt.Sprintf("invalid payment: it was made for the resource %q, not for this request's %q; a payment pays only for the resource it names, so nothing was charged: pay what this request's PAYMENT-REQUIRED header asks",
		excerpt.Of(named.URL, maxResourceQuoted), excerpt.Of(resource, maxResourceQuoted)))
}

// maxResourceQuoted bounds a resource URL quoted in a refusal.
const maxResourceQuoted = 200
