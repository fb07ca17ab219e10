package verifier

import (
	"encoding/json"
	"strconv"

	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
)

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
