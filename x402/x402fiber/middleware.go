package x402fiber

import (
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/trace"

	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// Prefix is stripped from a route's registered path to find its price
// (the API's routes live under /api/v1).
const Prefix = "/api/v1"

// maxResourceURL bounds the resource URL echoed in a 402.
const maxResourceURL = 512

// New returns the middleware for the routes v prices. Mount it where a
// payment is acceptable (as apikey.RequireOptions.OnMissingKey: premium
// requests that carry no key). Resource URLs are origin + path: the
// node's public origin, never one a request header names.
func New(v *verifier.Verifier, origin config.Origin) fiber.Handler {
	// One slot per payable route, made before any request: read-only
	// after this, so requests look theirs up without a lock.
	m := &middleware{v: v, origin: origin, slots: map[string]*slot{}}
	for _, r := range verifier.Routes {
		if v.Payable(r.Path) {
			m.slots[r.Path] = &slot{path: r.Path, param: r.Input.PathParam, payable: true}
		}
	}
	return m.serve
}

// middleware is the payment middleware New returns.
type middleware struct {
	v      *verifier.Verifier
	origin config.Origin
	slots  map[string]*slot // by route path, read-only
}

// serve answers a request of a payable route: the challenge when it
// carries no payment (the last 402's bytes when nothing it names has
// moved), a refusal when its payment does not verify, the answer a
// payment presented again bought; otherwise the route's handler runs
// (answer).
func (m *middleware) serve(c *fiber.Ctx) error {
	v := m.v
	path := strings.TrimPrefix(c.Route().Path, Prefix)
	sl := m.slots[path]
	if sl == nil {
		sl = &slot{path: path} // not payable: Begin refuses it, never cached
	}
	if ch := sl.last.Load(); ch != nil && ch.repeats(c) && v.UnpaidAgain(path, ch.key.extra) {
		// The same unpaid GET as the one this 402 answered (its
		// request line byte for byte, so it validated the same), and
		// nothing the 402 names has moved: the same bytes.
		return writeChallenge(c, ch, ch.key.status)
	}
	// An invalid request is refused before any payment work: no
	// simulation, no claim, no ledger row.
	if validate, ok := c.Locals(validateKey{}).(func(*fiber.Ctx) error); ok {
		if err := validate(c); err != nil {
			return err
		}
	}
	resource := resourceURL(m.origin, c)
	// Header values live in Fiber's buffers: copy them before they are
	// decoded or kept.
	req := verifier.Request{Path: path, ResourceURL: resource,
		PaymentV2: utils.CopyString(c.Get(x402.HeaderPaymentSignature)),
		PaymentV1: utils.CopyString(c.Get(x402.HeaderPaymentV1))}
	if req.PaymentV2 == "" && req.PaymentV1 == "" {
		// No payment: the challenge. Nothing to hash, decode or claim.
		q, res, ref := v.Unpaid(path, resource)
		return refuse(c, v, sl, resource, refused{Refusal: ref, known: &q, res: res})
	}
	// Only a payment is matched to its request: a bare challenge
	// neither hashes the body nor parses the query.
	req.Fingerprint = verifier.Fingerprint(c.Method(), c.Path(), string(c.Request().URI().QueryString()), c.Request().Body())
	req.Described = c.Method() + " " + strings.Clone(c.Path())
	ctx := paymentContext(c)
	p, ref := v.Begin(ctx, req)
	if ref != nil {
		return refuse(c, v, sl, resource, refused{Refusal: ref, v1: req.PaymentV2 == "" && req.PaymentV1 != ""})
	}
	if k := p.Kept(); k != nil {
		// Presented again: the answer it bought, byte for byte; no
		// handler runs, nothing is charged.
		return writeKept(c, k)
	}
	return m.answer(ctx, c, sl, resource, p)
}

// paymentContext is the context of a payment's work.
func paymentContext(c *fiber.Ctx) context.Context {
	ctx := context.Background()
	if tracing.Enabled() {
		// The request's span only: a payment's work is never
		// cancelled with the request.
		ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(c.UserContext()))
	}
	return ctx
}

// answer runs the route's handler for the verified payment p: an error
// answer (or a panic) gives the payment back, nothing charged; any other
// is kept and settled (settle).
func (m *middleware) answer(ctx context.Context, c *fiber.Ctx, sl *slot, resource string, p *verifier.Payment) error {
	v := m.v
	settled := false
	defer func() {
		// A panic in the handler: nothing was charged, give it back.
		if !settled {
			v.Release(p)
		}
	}()
	if err := c.Next(); err != nil {
		settled = true
		v.Release(p)
		return err
	}
	if c.Response().StatusCode() >= http.StatusBadRequest {
		settled = true
		v.Release(p)
		return nil
	}
	settled = true
	return m.settle(ctx, c, sl, resource, p)
}

// settle keeps the handler's answer, then charges the payment: the answer
// leaves with its PAYMENT-RESPONSE header, or is withheld with a refusal
// when it cannot be kept (the payment given back) or settled.
func (m *middleware) settle(ctx context.Context, c *fiber.Ctx, sl *slot, resource string, p *verifier.Payment) error {
	v := m.v
	// The answer is kept before the payment is settled: a payment is
	// charged only for an answer it can get again.
	if kref := v.Keep(ctx, p, answerOf(c)); kref != nil {
		v.Release(p)
		withhold(c)
		return refuse(c, v, sl, resource, refused{Refusal: kref, v1: p.V1})
	}
	resp, sref := v.Settle(ctx, p)
	hdr := x402.HeaderPaymentResponse
	if p.V1 {
		hdr = x402.HeaderPaymentResponseV1
	}
	enc, err := x402.EncodeHeader(resp)
	if err != nil {
		return err
	}
	if sref != nil {
		withhold(c)
		return refuse(c, v, sl, resource, refused{Refusal: sref, v1: p.V1, headers: map[string]string{hdr: enc}})
	}
	hdr, enc = v.Delivered(ctx, p, hdr, enc)
	c.Set(hdr, enc)
	httpcache.Private(c)
	c.Set("Access-Control-Expose-Headers", hdr)
	return nil
}

// withhold drops an answer's body and content headers (its payment is not
// settled, so it is not sent).
func withhold(c *fiber.Ctx) {
	c.Response().ResetBody()
	for _, h := range verifier.AnswerHeaders {
		c.Response().Header.Del(h)
	}
}

// answerOf is the answer about to be sent: status, content headers and
// body (the body's bytes are the response's own; Keep copies what it
// keeps).
func answerOf(c *fiber.Ctx) verifier.Answer {
	a := verifier.Answer{Status: c.Response().StatusCode(), Body: c.Response().Body()}
	h := &c.Response().Header
	for _, name := range verifier.AnswerHeaders {
		if name == fiber.HeaderContentType {
			a.Headers = append(a.Headers, [2]string{name, string(h.ContentType())})
			continue
		}
		if val := h.Peek(name); len(val) > 0 {
			a.Headers = append(a.Headers, [2]string{name, string(val)})
		}
	}
	a.Gzip = strings.EqualFold(strings.TrimSpace(string(h.Peek(fiber.HeaderContentEncoding))), "gzip")
	return a
}

// writeKept sends the answer a payment bought, presented again: its
// status, content headers and bytes as first sent (decoded when they were
// gzip-encoded and this request does not accept gzip), its settlement
// header as first sent, never cached.
func writeKept(c *fiber.Ctx, k *verifier.Kept) error {
	body, gz, err := k.Body(httpapi.AcceptsGzip(c))
	if err != nil {
		return err // a kept answer that does not decode: 500, and logged
	}
	h := &c.Response().Header
	for _, kv := range k.Headers {
		if kv[0] == fiber.HeaderContentEncoding && !gz {
			continue
		}
		h.Set(kv[0], kv[1])
	}
	c.Status(k.Status)
	c.Set(k.ResponseHeader, k.PaymentResponse)
	httpcache.Private(c)
	c.Set("Access-Control-Expose-Headers", k.ResponseHeader)
	c.Response().SetBodyRaw(body)
	return nil
}

// Unavailable answers premium requests that carry no key on a node
// without a public origin (ATTESTD_PUBLIC_URL): 503.
func Unavailable(c *fiber.Ctx) error {
	return apierror.Unavailable("pay per request is off on this node: set ATTESTD_PUBLIC_URL to the origin clients use (such as https://attestd.example.com); or send an API key")
}

// validateKey holds a route's request validation in the context's locals.
type validateKey struct{}

// Validate returns a handler that records fn as the route's request
// validation (query parameters, body): mounted before the payment
// middleware, it makes an invalid request fail with fn's error (its 4xx)
// before any payment work. Requests that pay by API key are not affected.
func Validate(fn func(*fiber.Ctx) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Locals(validateKey{}, fn)
		return c.Next()
	}
}

// resourceURL is the request's path at the public origin, bounded, in
// memory of its own (never Fiber's buffer).
func resourceURL(origin config.Origin, c *fiber.Ctx) string {
	p := c.Path()
	if len(p) > maxResourceURL {
		p = p[:maxResourceURL]
	}
	if origin.String() == "" {
		return strings.Clone(p)
	}
	u := origin.URL(p) // a new string: the concatenation copies p
	if len(u) > maxResourceURL {
		u = u[:maxResourceURL]
	}
	return u
}

// body2 is a v2 refusal: the PaymentRequired fields beside the envelope.
// PaymentRequired's own error string travels in the header and as
// error.reason; its extensions (bazaar, with an example answer) in the
// header only, so a refusal's body never holds answer-shaped data.
type body2 struct {
	X402Version int                 `json:"x402Version"`
	Resource    x402.ResourceInfo   `json:"resource"`
	Accepts     []x402.Requirements `json:"accepts"`
	Error       envelope            `json:"error"`
}

type body1 struct {
	X402Version int                   `json:"x402Version"`
	Accepts     []x402.RequirementsV1 `json:"accepts"`
	Error       envelope              `json:"error"`
}

type envelope struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

// refused is one refusal and how to answer it.
type refused struct {
	*verifier.Refusal
	v1      bool               // answer in the v1 shape (the payment came as X-PAYMENT)
	headers map[string]string  // set on the answer too (nil: none)
	known   *x402.Requirements // the requirements it was decided with (nil: asked of the verifier)
	res     x402.ResourceInfo  // with known, their resource
}

// refuse writes a refusal: for those a new payment can fix, the payment
// instructions in the header (v2) and the body; otherwise the plain
// envelope. Refusals are never cached.
func refuse(c *fiber.Ctx, v *verifier.Verifier, sl *slot, resource string, r refused) error {
	c.Set(fiber.HeaderCacheControl, httpcache.NoStore)
	if r.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(r.RetryAfter))
	}
	for k, val := range r.headers {
		c.Set(k, val)
	}
	var q x402.Requirements
	res := r.res
	ok := r.known != nil && r.known.Extra != nil
	if ok {
		q = *r.known
	} else if r.Challenge {
		q, res, ok = v.Requirements(sl.path, resource)
	}
	if !r.Challenge || !ok {
		return c.Status(r.Status).JSON(apierror.Body(r.Code, r.Message))
	}
	env := envelope{Code: r.Code, Message: r.Message}
	if r.Reason != verifier.ReasonMissing {
		env.Reason = r.Reason
	}
	if r.v1 {
		return c.Status(r.Status).JSON(body1{X402Version: 1, Accepts: []x402.RequirementsV1{q.V1(res)}, Error: env})
	}
	// The same challenge (route, resource, refusal, fee payer, blockhash
	// hint) is encoded once: a popular resource's 402s reuse the bytes.
	// q.Extra is the verifier's shared value, replaced (never changed)
	// when the fee payer or the hint moves: comparing the pointer is
	// comparing them.
	key := challengeKey{resource: resource, status: r.Status, code: r.Code, message: r.Message, reason: r.Reason, extra: q.Extra}
	ch := sl.last.Load()
	if ch == nil || ch.key != key {
		// The header's error is short for the most frequent 402 (no
		// payment: the price is in accepts, the sentence in the body).
		pr := x402.PaymentRequired{X402Version: 2, Error: "Payment required", Resource: res, Accepts: []x402.Requirements{q}}
		if r.Reason != verifier.ReasonMissing {
			pr.Error = r.Reason + ": " + r.Message
		}
		h, err := encodeRequired(pr, v.Bazaar(sl.path, pathValue(c, sl.param)))
		if err != nil {
			return err
		}
		body, err := json.Marshal(body2{X402Version: 2, Resource: res, Accepts: pr.Accepts, Error: env})
		if err != nil {
			return err
		}
		ch = &challenge{key: key, header: []byte(h), body: body}
		if r.Reason == verifier.ReasonMissing && c.Method() == fiber.MethodGet && r.known != nil {
			// An unpaid GET: the same request line again may be answered
			// these bytes without being parsed (see challenge.repeats).
			ch.requestURI = bytes.Clone(c.Request().RequestURI())
		}
		if sl.payable {
			sl.last.Store(ch)
		}
	}
	return writeChallenge(c, ch, r.Status)
}

// writeChallenge sends a v2 challenge's bytes (never stored by caches).
func writeChallenge(c *fiber.Ctx, ch *challenge, status int) error {
	h := &c.Response().Header
	h.SetCanonical(headerCacheControl, headerNoStore)
	h.SetCanonical(headerPaymentRequired, ch.header)
	h.SetCanonical(headerExpose, headerExposeValue)
	h.SetContentType(fiber.MIMEApplicationJSON)
	c.Status(status)
	c.Response().SetBodyRaw(ch.body)
	return nil
}

// Header names as fasthttp writes them (normalized), set without being
// normalized again on every 402.
var (
	headerPaymentRequired = []byte("Payment-Required")
	headerExpose          = []byte("Access-Control-Expose-Headers")
	headerExposeValue     = []byte(x402.HeaderPaymentRequired) // as the other answers name it
	headerCacheControl    = []byte(fiber.HeaderCacheControl)
	headerNoStore         = []byte(httpcache.NoStore)
	headerPaymentSig      = []byte(x402.HeaderPaymentSignature)
	headerPaymentV1       = []byte(x402.HeaderPaymentV1)
)

// slot is one payable route's state in the middleware: its path, its path
// parameter, and the last 402 encoded for it (immutable entries, replaced
// whole).
type slot struct {
	path, param string
	last        atomic.Pointer[challenge]
	// payable: made by New for a route the verifier prices (others are
	// made per request and never cache).
	payable bool
}

// challengeKey is everything a v2 402's bytes depend on beyond its slot
// (verifier and route).
type challengeKey struct {
	resource              string
	status                int
	code, message, reason string
	extra                 *x402.Extra
}

type challenge struct {
	key    challengeKey
	header []byte
	body   []byte // immutable: answers are sent with SetBodyRaw
	// requestURI is the request line's target (path and query, as sent)
	// of the unpaid GET this 402 was made for (nil: another refusal).
	requestURI []byte
}

// repeats reports whether c is an unpaid GET with the request target the
// challenge was made for: it validates the same (validation reads only
// the path and the query of a GET) and names the same resource (the
// public origin and the path).
func (ch *challenge) repeats(c *fiber.Ctx) bool {
	if ch.requestURI == nil || c.Method() != fiber.MethodGet || !bytes.Equal(ch.requestURI, c.Request().RequestURI()) {
		return false
	}
	h := &c.Request().Header
	return len(h.PeekBytes(headerPaymentSig)) == 0 && len(h.PeekBytes(headerPaymentV1)) == 0
}

// encodeRequired is the PAYMENT-REQUIRED header of pr with the bazaar
// extension bz (already JSON, trusted: made by the verifier) and the
// payment-identifier declaration, spliced in rather than re-validated by
// encoding/json: the extensions are most of the header.
func encodeRequired(pr x402.PaymentRequired, bz json.RawMessage) (string, error) {
	if bz == nil || len(pr.Extensions) > 0 {
		// Other extensions too (or no bazaar): one member, built whole.
		ext := maps.Clone(pr.Extensions)
		if ext == nil {
			ext = map[string]json.RawMessage{}
		}
		if bz != nil {
			ext[x402.ExtensionBazaar] = bz
		}
		ext[x402.ExtensionPaymentIdentifier] = x402.PaymentIdentifierDeclaration
		pr.Extensions = ext
		return x402.EncodeHeader(pr)
	}
	b, err := json.Marshal(pr)
	if err != nil {
		return "", err
	}
	// b ends with "}": insert the extensions member before it.
	out := make([]byte, 0, len(b)+len(bz)+len(x402.PaymentIdentifierDeclaration)+64)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"extensions":{"bazaar":`...)
	out = append(out, bz...)
	out = append(out, `,"`+x402.ExtensionPaymentIdentifier+`":`...)
	out = append(out, x402.PaymentIdentifierDeclaration...)
	out = append(out, "}}"...)
	return base64.StdEncoding.EncodeToString(out), nil
}

// maxPathValue bounds a path parameter echoed in a 402's bazaar extension.
const maxPathValue = 64

// pathValue is the request's value of the route's path parameter param
// ("" for a static route), copied and bounded.
func pathValue(c *fiber.Ctx, param string) string {
	if param == "" {
		return ""
	}
	val := c.Params(param)
	if len(val) > maxPathValue || val == "" {
		return ""
	}
	return strings.Clone(val)
}
