package verifier

import (
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// MaxTimeoutSeconds is the requirements' maxTimeoutSeconds: how long a
// payer may take; the blockhash bounds it anyway.
const MaxTimeoutSeconds = 60

// Ledger records payments (store.Store implements it).
type Ledger interface {
	ClaimPayment(ctx context.Context, p store.Payment) (int64, error)
	FinishPayment(ctx context.Context, id int64, status store.PaymentStatus, txSignature, reason string) error
	NotePayment(ctx context.Context, id int64, reason string) error
	PaymentByMessage(ctx context.Context, hash [32]byte) (store.Payment, error)
	PaymentByID(ctx context.Context, paymentID string) (store.Payment, error)
	SaveReceipt(ctx context.Context, id int64, receipt string) (string, error)
	KeepAnswer(ctx context.Context, a store.Answer, expiresAt time.Time, capBytes int64) error
	PaymentAnswer(ctx context.Context, paymentID int64) (store.Answer, error)
	SetAnswerResponse(ctx context.Context, paymentID int64, header, value string) (string, string, error)
	PruneAnswers(ctx context.Context, now time.Time, limit int) (store.Pruned, error)
}

// Options configure a Verifier.
type Options struct {
	Config Config
	// Redis holds the replay guard (nil: the ledger alone guards).
	Redis redis.UniversalClient
	// KeyPrefix prefixes the guard's keys (e.g. "attestd:x402:").
	KeyPrefix string
	Ledger    Ledger // required
	Logger    *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// HTTPClient calls the facilitator (nil: a client that follows no redirects).
	HTTPClient *http.Client
	// Node names this process in the ledger (default: the host name).
	Node string
	// Receipts signs a receipt for every paid answer (nil: none).
	Receipts *receipt.Signer
}

// settler is how payments are checked against the chain and settled.
type settler interface {
	feePayer() (solana.PublicKey, bool)
	recentBlockhash() (solana.Hash, uint64, bool)
	verify(ctx context.Context, p *Payment) *Refusal
	// settle returns the ledger status the settlement ends in: settled,
	// released (nothing charged), pending (the chain decides later) or
	// failed (unknown, for the operator).
	settle(ctx context.Context, p *Payment) (txSig string, status store.PaymentStatus, r *Refusal)
	// check asks the chain about a sent transaction (errNoChain: cannot).
	check(ctx context.Context, sig solana.Signature, lastValid uint64) (chainState, string, error)
}

// errNoChain: this settler cannot ask the chain about a transaction.
var errNoChain = errors.New("x402 verifier: settled by a facilitator: the chain is not asked directly")

// Verifier guards payable routes. It is safe for concurrent use.
type Verifier struct {
	cfg    Config
	log    *slog.Logger
	ledger Ledger
	guard  *replayGuard
	m      *metrics
	s      settler
	node   string
	routes map[string]*route
	signer *receipt.Signer
	now    func() time.Time
	// retention and storeBytes bound the kept answers (answers.go).
	retention  time.Duration
	storeBytes int64
	// base58 of the asset and payTo, encoded once
	assetStr, payToStr string
	// extra is the requirements' extra (fee payer, blockhash hint) as
	// last made: shared, never modified, replaced whole when either moves.
	extra   atomic.Pointer[extraOf]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Once
}

type route struct {
	Route
	amount    uint64
	terms     x402.ExactTerms
	bazaar    json.RawMessage // the declaration's bazaar extension
	amountStr string
	// bazaarPre and bazaarPost surround the path value's JSON string in
	// a request's bazaar extension (nil: encode it whole).
	bazaarPre, bazaarPost []byte
	// missing is the challenge to a request that carries no payment
	// (made once: its message names the price; shared, never modified).
	missingRef *Refusal
}

// pathPlaceholder stands for the path value in the pre-encoded bazaar.
const pathPlaceholder = "@@attestd-path-value@@"

// New builds a verifier. With a facilitator it reads /supported first
// (retrying in the background while the facilitator does not answer; until
// then payable routes answer 503); a facilitator that answers without our
// network's exact kind is a configuration error.
func New(ctx context.Context, opt Options) (*Verifier, error) {
	cfg := opt.Config
	if !cfg.Enabled() {
		return nil, errOff
	}
	if opt.Ledger == nil {
		return nil, errors.New("x402 verifier: a ledger is required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Node == "" {
		opt.Node, _ = os.Hostname()
	}
	v := &Verifier{cfg: cfg, log: opt.Logger.With("component", "x402"), ledger: opt.Ledger, m: newMetrics(opt.Registerer),
		node: opt.Node, routes: map[string]*route{}, signer: opt.Receipts, now: time.Now,
		assetStr: cfg.Asset.String(), payToStr: cfg.PayTo.String(),
		guard:     &replayGuard{rdb: opt.Redis, prefix: opt.KeyPrefix, timeout: 500 * time.Millisecond},
		retention: cfg.retention(), storeBytes: cfg.AnswerStoreBytes}
	if v.storeBytes <= 0 {
		v.storeBytes = DefaultAnswerStoreBytes
	}
	runCtx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.wg.Add(1)
	go func() { defer v.wg.Done(); v.pruneLoop(runCtx) }()
	if cfg.SelfSettling() {
		s := newSelfSettler(cfg.FeePayer, cfg.RPCURL, cfg.SettleTimeout)
		s.refreshHint(time.Second) // the first 402 already carries a blockhash hint
		v.s = s
	} else {
		f := newFacilitator(cfg.FacilitatorURL, opt.HTTPClient, cfg, v.log)
		v.s = f
		if err := f.load(ctx); err != nil {
			var ns *errNotSupported
			if errors.As(err, &ns) {
				cancel()
				return nil, err
			}
			v.log.Warn("facilitator not reachable yet; payable routes answer 503 until it is", "url", cfg.FacilitatorURL, "err", err)
			v.wg.Add(1)
			go func() { defer v.wg.Done(); v.retryLoad(runCtx, f) }()
		}
	}
	for _, r := range Routes {
		amount := cfg.Prices[r.Path]
		if amount == 0 {
			continue
		}
		rt := &route{Route: r, amount: amount, terms: x402.ExactTerms{PayTo: cfg.PayTo, Asset: cfg.Asset, Amount: amount, Decimals: cfg.Decimals}}
		rt.amountStr = strconv.FormatUint(amount, 10)
		rt.missingRef = challenge(ReasonMissing, fmt.Sprintf("this route needs an API key in the x-api-key header, or a payment of %s %s (x402: see the PAYMENT-REQUIRED header)",
			x402.FormatAmount(amount, cfg.Decimals), v.assetName()))
		if b, err := json.Marshal(r.Bazaar("")); err == nil {
			rt.bazaar = b
		}
		if r.Input.PathParam != "" {
			// Encoded once around a placeholder: a 402 only splices in
			// its path value.
			if b, err := json.Marshal(r.Bazaar(pathPlaceholder)); err == nil {
				if pre, post, ok := bytes.Cut(b, []byte(`"`+pathPlaceholder+`"`)); ok && !bytes.Contains(post, []byte(pathPlaceholder)) {
					rt.bazaarPre, rt.bazaarPost = pre, post
				}
			}
		}
		if err := rt.terms.Prepare(); err != nil {
			cancel()
			return nil, fmt.Errorf("x402 verifier: derive payTo's token account: %w", err)
		}
		v.routes[r.Path] = rt
	}
	return v, nil
}

func (v *Verifier) retryLoad(ctx context.Context, f *facilitator) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		err := f.load(ctx)
		if err == nil {
			pk, _ := f.feePayer()
			v.log.Info("facilitator reachable", "url", v.cfg.FacilitatorURL, "fee_payer", pk.String())
			return
		}
		v.log.Warn("facilitator still not reachable", "url", v.cfg.FacilitatorURL, "err", err)
	}
}

// Close stops background work.
func (v *Verifier) Close() {
	v.closeMu.Do(func() {
		v.cancel()
		v.wg.Wait()
	})
}

// Config is the configuration in use.
func (v *Verifier) Config() Config { return v.cfg }

// FeePayer is the fee payer put in requirements (false: not known yet).
func (v *Verifier) FeePayer() (solana.PublicKey, bool) { return v.s.feePayer() }

// Payable reports whether a route path (below /api/v1, as registered) has
// a price.
func (v *Verifier) Payable(path string) bool {
	_, ok := v.routes[path]
	return ok
}

// Receipts is the receipt signer (nil: no receipts).
func (v *Verifier) Receipts() *receipt.Signer { return v.signer }

// Bazaar is the bazaar extension of a route's 402 for a request whose
// path parameter is pathValue ("" for a static route: the declaration,
// encoded once).
func (v *Verifier) Bazaar(path, pathValue string) json.RawMessage {
	rt, ok := v.routes[path]
	if !ok {
		return nil
	}
	if pathValue == "" || rt.Input.PathParam == "" {
		return rt.bazaar
	}
	if rt.bazaarPre != nil {
		q, err := json.Marshal(pathValue)
		if err != nil {
			return rt.bazaar
		}
		b := make([]byte, 0, len(rt.bazaarPre)+len(q)+len(rt.bazaarPost))
		return append(append(append(b, rt.bazaarPre...), q...), rt.bazaarPost...)
	}
	b, err := json.Marshal(rt.Bazaar(pathValue))
	if err != nil {
		return rt.bazaar
	}
	return b
}

// Requirements are what a request of route must pay, and what it buys.
// ok is false while the fee payer is unknown (a facilitator not reached
// yet) or when the route is not payable.
func (v *Verifier) Requirements(path, resourceURL string) (q x402.Requirements, r x402.ResourceInfo, ok bool) {
	rt, found := v.routes[path]
	if !found {
		return q, r, false
	}
	extra, known := v.currentExtra()
	if !known {
		return q, r, false
	}
	q = x402.Requirements{Scheme: x402.SchemeExact, Network: v.cfg.Network.CAIP2, Amount: rt.amountStr,
		Asset: v.assetStr, PayTo: v.payToStr, MaxTimeoutSeconds: MaxTimeoutSeconds, Extra: extra}
	r = x402.ResourceInfo{URL: resourceURL, Description: rt.Description, MimeType: "application/json"}
	return q, r, true
}

// extraOf is the requirements' extra for one fee payer and blockhash hint.
type extraOf struct {
	feePayer solana.PublicKey
	hint     solana.Hash // zero: no hint
	lv       uint64
	extra    *x402.Extra
}

// currentExtra is the extra of the fee payer and blockhash hint now
// (false while the fee payer is unknown). It is encoded once per fee
// payer and hint, and shared: callers never modify it.
func (v *Verifier) currentExtra() (*x402.Extra, bool) {
	fp, known := v.s.feePayer()
	if !known {
		return nil, false
	}
	h, lv, ok := v.s.recentBlockhash()
	if !ok {
		h, lv = solana.Hash{}, 0
	}
	if e := v.extra.Load(); e != nil && e.feePayer == fp && e.hint == h && e.lv == lv {
		return e.extra, true
	}
	e := &extraOf{feePayer: fp, hint: h, lv: lv, extra: &x402.Extra{FeePayer: fp.String()}}
	if ok {
		e.extra.RecentBlockhash, e.extra.LastValidBlockHeight = h.String(), strconv.FormatUint(lv, 10)
	}
	v.extra.Store(e)
	return e.extra, true
}

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

// Unpaid is Begin for a request that carries no payment: the challenge
// (or why payments are not available), counted as Begin counts it, with
// the requirements the challenge names. It reads no header, no ledger
// and no chain: the 402 of a payable route is the service's most frequent
// paid-route answer.
func (v *Verifier) Unpaid(path, resourceURL string) (x402.Requirements, x402.ResourceInfo, *Refusal) {
	rt, q, res, ref := v.offer(path, resourceURL)
	if ref == nil {
		ref = rt.missingRef
	}
	v.count(ref)
	return q, res, ref
}

// offer is the route of path and what a request of it must pay, or why
// nothing can be paid now (a refusal).
func (v *Verifier) offer(path, resourceURL string) (*route, x402.Requirements, x402.ResourceInfo, *Refusal) {
	rt, ok := v.routes[path]
	if !ok {
		return nil, x402.Requirements{}, x402.ResourceInfo{}, unavailable(ReasonNotReady, "this route is not payable")
	}
	q, res, ok := v.Requirements(path, resourceURL)
	if !ok {
		return nil, q, res, unavailable(ReasonNotReady, "payments are not available right now (the facilitator has not answered yet); use an API key or try again shortly")
	}
	return rt, q, res, nil
}

// count counts a refusal by its reason.
func (v *Verifier) count(r *Refusal) {
	if r.Reason == ReasonMissing {
		v.m.refusedMissing.Inc()
		return
	}
	v.m.refused.WithLabelValues(r.Reason).Inc()
}

// UnpaidAgain reports whether a 402 made for route path with extra (the
// Requirements' Extra of an earlier Unpaid) is still the one to send: the
// fee payer and the blockhash hint have not moved. When it is, the answer
// is counted as Unpaid counts it.
func (v *Verifier) UnpaidAgain(path string, extra *x402.Extra) bool {
	if _, ok := v.routes[path]; !ok || extra == nil {
		return false
	}
	if cur, ok := v.currentExtra(); !ok || cur != extra {
		return false
	}
	v.m.refusedMissing.Inc()
	return true
}

type outcome struct {
	p   *Payment
	ref *Refusal
	// inflight: refused because the payment's first request is still
	// being answered (worth looking again shortly).
	inflight bool
}

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
	p := &Payment{Path: req.Path, Amount: rt.amount, fingerprint: req.Fingerprint, Resource: x402.ResourceInfo{URL: req.ResourceURL}}
	var raw []byte
	var payload *x402.PaymentPayload
	var network string // a v1 payload's
	if req.PaymentV2 != "" {
		pl, tx, err := x402.DecodePaymentV2(req.PaymentV2)
		if err != nil {
			return outcome{ref: fromCheck(err)}
		}
		id, err := x402.PaymentIdentifier(pl)
		if err != nil {
			return outcome{ref: fromCheck(err)}
		}
		payload, p.paymentID, raw = pl, id, tx
	} else {
		p.V1 = true
		pl, tx, err := x402.DecodePaymentV1(req.PaymentV1)
		if err != nil {
			return outcome{ref: fromCheck(err)}
		}
		network, raw = pl.Network, tx
	}
	tx, err := x402.DecodeTransaction(raw)
	if err != nil {
		return outcome{ref: fromCheck(err)}
	}
	payer, hash, serr := x402.Signed(tx)
	if serr != nil {
		return outcome{ref: fromCheck(serr)}
	}
	p.Tx, p.Checked = tx, &x402.Checked{Payer: payer, MessageHash: hash}
	// A payment presented before is judged by what it bought, before
	// anything of today is asked of it: settled, it gets its answer for
	// the request it bought (whatever the price, fee payer or blockhash
	// hint now); pending or failed, the chain says.
	out, done, released := v.presentedBefore(ctx, req, p)
	if done {
		return out
	}
	// A payment never seen (or released, never charged): today's terms.
	_, q, res, ref := v.offer(req.Path, req.ResourceURL)
	if ref != nil {
		return outcome{ref: ref}
	}
	p.Requirements, p.Resource = q, res
	if payload != nil {
		if ref := otherResource(payload.Resource, req.ResourceURL); ref != nil {
			return outcome{ref: ref}
		}
		if !q.Match(payload.Accepted) {
			return outcome{ref: challenge(x402.ReasonRequirementsMismatch, "payment refused: its accepted requirements (scheme, network, amount, asset, payTo, feePayer) are not this route's; pay what the PAYMENT-REQUIRED header asks")}
		}
	} else if network != v.cfg.Network.Name {
		return outcome{ref: challenge(x402.ReasonInvalidNetwork, fmt.Sprintf("payment refused: network %q is not %q", excerpt.Of(network, 40), v.cfg.Network.Name))}
	}
	terms := rt.terms
	terms.FeePayer, _ = solana.PublicKeyFromBase58(q.Extra.FeePayer)
	checked, cerr := x402.CheckExact(tx, &terms)
	v.m.local.Observe(time.Since(start).Seconds())
	if cerr != nil {
		return outcome{ref: fromCheck(cerr)}
	}
	p.Checked = checked
	// One payment, one answer: claim the message in Redis (fast, shared by
	// the fleet), check it against the chain, then in the ledger (durable).
	// A released row is claimed again in the ledger alone (its Redis claim
	// may outlive its release by a process without Redis).
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

func (v *Verifier) assetName() string {
	if v.cfg.Asset == v.cfg.Network.USDC {
		return "USDC"
	}
	return "of token " + v.cfg.Asset.String()
}

// unclaim gives the Redis claim back and, when the ledger holds the
// payment, marks it released: nothing was charged.
func (v *Verifier) unclaim(p *Payment, ledger bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ledger {
		if err := v.ledger.FinishPayment(ctx, p.ledgerID, store.PaymentReleased, "", "the answer was an error; not charged"); err != nil {
			v.log.Error("ledger: release payment", "id", p.ledgerID, "err", err)
		}
	}
	if err := v.guard.release(ctx, p.Checked.MessageHash); err != nil {
		v.log.Warn("replay guard: release claim", "err", err)
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

// Preflight logs what would make every payment fail (self-settling only:
// payTo's token account missing, no SOL for fees). It never fails.
func (v *Verifier) Preflight(ctx context.Context) {
	s, ok := v.s.(*selfSettler)
	if !ok {
		return
	}
	for _, rt := range v.routes {
		for _, w := range s.preflight(ctx, rt.terms.Destination(solana.TokenProgramID)) {
			v.log.Warn("x402 preflight: " + w)
		}
		return
	}
}
