package x402fiber_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
)

// A payment built as a wallet builds it buys the answer: 200, the content,
// PAYMENT-RESPONSE naming the settled transaction, payTo richer by the
// price, the ledger settled, and the same payment refused afterwards.
func TestPaidRequestSettles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	q := pr.Accepts[0]
	if pr.X402Version != 2 || q.Network != x402.Devnet.CAIP2 || q.Amount != "10000" || q.Asset != x402.Devnet.USDC.String() ||
		q.PayTo != f.PayTo.String() || q.Extra == nil || q.Extra.FeePayer != f.FeePayer.PublicKey().String() ||
		!strings.HasSuffix(pr.Resource.URL, path) {
		t.Fatalf("challenge %+v %+v", pr, q)
	}
	before := f.balance(t)
	payment := f.wallet(t, pr)
	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data"`) {
		t.Fatalf("paid: %d %s", r.Status, r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "private, no-store" {
		t.Errorf("paid answer Cache-Control %q", cc)
	}
	sr, err := x402.DecodeSettleResponse(r.Header.Get(x402.HeaderPaymentResponse))
	testenv.Must(t, err, "PAYMENT-RESPONSE")
	if !sr.Success || sr.Transaction == "" || sr.Network != x402.Devnet.CAIP2 || sr.Payer != f.Payer.PublicKey().String() {
		t.Fatalf("settle response %+v", sr)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("payTo balance %d -> %d, want +%d", before, got, price)
	}
	settled := ledger(t, n.Store, store.PaymentSettled)
	if len(settled) != 1 || settled[0].TxSignature != sr.Transaction || settled[0].Amount != price ||
		settled[0].Route != historyPath || settled[0].Payer != f.Payer.PublicKey().String() || settled[0].SettledAt == nil {
		t.Fatalf("ledger %+v", settled)
	}
	// The same payment again for the same request: the answer it bought,
	// again, with no new charge; for another request: refused.
	r = n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data"`) {
		t.Fatalf("presented again: %d %s", r.Status, r.Body)
	}
	if again, err := x402.DecodeSettleResponse(r.Header.Get(x402.HeaderPaymentResponse)); err != nil || again.Transaction != sr.Transaction {
		t.Fatalf("presented again: PAYMENT-RESPONSE %+v %v", again, err)
	}
	r = n.pay(t, http.MethodGet, path+"?limit=1", nil, payment)
	if r.Status != http.StatusConflict || r.ErrorCode() != "PAYMENT_REPLAYED" {
		t.Fatalf("replay for another request: %d %s", r.Status, r.Body)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("replay moved money: %d", got)
	}
	if s := ledger(t, n.Store, ""); len(s) != 1 {
		t.Fatalf("ledger rows after replays: %+v", s)
	}
	if counter(t, n.reg, "attestd_x402_settled_total") != 1 || counter(t, n.reg, "attestd_x402_paid_total") != 1 ||
		counter(t, n.reg, "attestd_x402_refused_total", "reason", verifier.ReasonReplayed) != 1 ||
		counter(t, n.reg, "attestd_x402_refused_total", "reason", verifier.ReasonMissing) != 1 {
		t.Errorf("metrics: settled %v paid %v", counter(t, n.reg, "attestd_x402_settled_total"), counter(t, n.reg, "attestd_x402_paid_total"))
	}
}

// The unpaid 402: the header and the body say the same thing, and the
// answer is never cached; a key still wins over a payment.
func TestChallengeShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	r := n.Do(t, http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":["x"]}`), nil)
	if r.Status != http.StatusPaymentRequired || r.ErrorCode() != "PAYMENT_REQUIRED" || r.Header.Get("Cache-Control") != "no-store" {
		// no-store, as openapi.yaml says of the 402 and of every error answer.
		t.Fatalf("402: %d %v %s", r.Status, r.Header, r.Body)
	}
	var body struct {
		X402Version int                 `json:"x402Version"`
		Accepts     []x402.Requirements `json:"accepts"`
		Resource    x402.ResourceInfo   `json:"resource"`
		Error       struct{ Code, Message, Reason string }
	}
	r.JSON(t, &body)
	pr, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
	testenv.Must(t, err, "header")
	if body.X402Version != 2 || len(body.Accepts) != 1 || !body.Accepts[0].Match(pr.Accepts[0]) || body.Accepts[0].Amount != "20000" ||
		body.Resource != pr.Resource || body.Error.Reason != "" || !strings.Contains(body.Error.Message, "0.02 USDC") || pr.Error == "" {
		t.Fatalf("body %+v header %+v", body, pr)
	}
	// A malformed key is 401 as before: payments are for requests without one.
	r = n.Do(t, http.MethodGet, "/premium/full-history/"+f.agent, nil, map[string]string{"x-api-key": "atst_nope"})
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", r.Status)
	}
}

// The handler answers an error: nothing is settled and the payment is
// given back. Given back, it is still bound to the resource it names
// (another one is 400, nothing charged); a payment that names none (v1,
// and v2 clients that leave resource out) then buys a successful answer.
func TestHandlerErrorIsNotSettled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	unknown := "/premium/full-history/" + f.chain.NewKeypair().PublicKey().String()
	pr := n.challenge(t, http.MethodGet, unknown, nil)
	wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build payment")
	named := header(t, x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire))
	unnamed := x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire)
	unnamed.Resource = nil
	before := f.balance(t)
	r := n.pay(t, http.MethodGet, unknown, nil, named)
	if r.Status != http.StatusNotFound || r.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("unknown agent: %d %v %s", r.Status, r.Header, r.Body)
	}
	if f.balance(t) != before {
		t.Fatal("a failed answer was charged")
	}
	if rel := ledger(t, n.Store, store.PaymentReleased); len(rel) != 1 {
		t.Fatalf("ledger released rows: %+v", rel)
	}
	r = n.pay(t, http.MethodGet, "/premium/full-history/"+f.agent, nil, named)
	if r.Status != http.StatusBadRequest || reason(t, r) != verifier.ReasonOtherResource || f.balance(t) != before {
		t.Fatalf("released payment for another resource than it names: %d %s", r.Status, r.Body)
	}
	r = n.pay(t, http.MethodGet, "/premium/full-history/"+f.agent, nil, header(t, unnamed))
	if r.Status != http.StatusOK || f.balance(t) != before+price {
		t.Fatalf("reused released payment that names no resource: %d %s", r.Status, r.Body)
	}
	if counter(t, n.reg, "attestd_x402_released_total") != 1 {
		t.Error("released not counted")
	}
}

// A payment is bound to the resource it names: a payload whose
// resource.url is not this request's resource URL (the configured public
// origin and the request's path, byte for byte as the 402 gave it) is
// refused with 400 before anything is claimed or charged, whatever the
// spelling; the exact URL, no resource, or a resource without a url pay.
// The request's Host and X-Forwarded-* headers never make the resource.
func TestPaymentIsBoundToItsResource(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	other := ""
	for _, a := range f.env.Seeded.Agents {
		if a.PDA.String() != f.agent {
			other = a.PDA.String()
		}
	}
	pr := n.challenge(t, http.MethodGet, path, nil)
	url := pr.Resource.URL
	if url != testOrigin.URL("/api/v1"+path) {
		t.Fatalf("the 402 names %q", url)
	}
	flip := []byte(f.agent)
	for i, c := range flip {
		if c >= 'a' && c <= 'z' {
			flip[i] = c - 32
			break
		}
	}
	// build pays for pr's terms with a payload whose resource member is
	// the JSON res ("" leaves the member out).
	build := func(res string) string {
		wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		p := x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire)
		p.Resource = nil
		b, err := json.Marshal(p)
		testenv.Must(t, err, "payload")
		if res != "" {
			b = append(append(append(b[:len(b)-1:len(b)-1], `,"resource":`...), res...), '}')
		}
		return encode(b)
	}
	named := func(u string) string {
		b, err := json.Marshal(x402.ResourceInfo{URL: u, Description: pr.Resource.Description, MimeType: pr.Resource.MimeType})
		testenv.Must(t, err, "resource")
		return string(b)
	}
	cases := []struct {
		name, resource string
		hdr            map[string]string
		status         int
		reason         string
	}{
		{"another agent's full history", named(testOrigin.URL("/api/v1/premium/full-history/" + other)), nil, 400, verifier.ReasonOtherResource},
		{"another route, same agent", named(testOrigin.URL("/api/v1/premium/forensic-report/" + f.agent)), nil, 400, verifier.ReasonOtherResource},
		{"another host", named(strings.Replace(url, "attestd.test", "evil.example", 1)), nil, 400, verifier.ReasonOtherResource},
		{"another host, named by the request's Host too", named(strings.Replace(url, "attestd.test", "evil.example", 1)),
			map[string]string{"Host": "evil.example", "X-Forwarded-Host": "evil.example"}, 400, verifier.ReasonOtherResource},
		{"a subdomain", named(strings.Replace(url, "attestd.test", "api.attestd.test", 1)), nil, 400, verifier.ReasonOtherResource},
		{"the host in upper case", named(strings.Replace(url, "attestd.test", "ATTESTD.TEST", 1)), nil, 400, verifier.ReasonOtherResource},
		{"http", named(strings.Replace(url, "https://", "http://", 1)), nil, 400, verifier.ReasonOtherResource},
		{"an explicit :443", named(strings.Replace(url, "attestd.test", "attestd.test:443", 1)), nil, 400, verifier.ReasonOtherResource},
		{"user info", named(strings.Replace(url, "https://", "https://attestd.test@", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a query", named(url + "?limit=5"), nil, 400, verifier.ReasonOtherResource},
		{"an empty query", named(url + "?"), nil, 400, verifier.ReasonOtherResource},
		{"a fragment", named(url + "#x"), nil, 400, verifier.ReasonOtherResource},
		{"the path in another case", named(testOrigin.URL("/api/v1/premium/full-history/" + string(flip))), nil, 400, verifier.ReasonOtherResource},
		{"the route in upper case", named(strings.Replace(url, "full-history", "FULL-HISTORY", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a trailing slash", named(url + "/"), nil, 400, verifier.ReasonOtherResource},
		{"a doubled slash", named(strings.Replace(url, "/premium/", "/premium//", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a dot segment", named(strings.Replace(url, "/premium/", "/premium/./", 1)), nil, 400, verifier.ReasonOtherResource},
		{"percent-encoded", named(strings.Replace(url, "full-history", "full%2Dhistory", 1)), nil, 400, verifier.ReasonOtherResource},
		{"percent-encoded slash", named(strings.Replace(url, "full-history/", "full-history%2F", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a Cyrillic look-alike host", named(strings.Replace(url, "attestd", "аttestd", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a full-width path", named(strings.Replace(url, "premium", "ｐremium", 1)), nil, 400, verifier.ReasonOtherResource},
		{"a NUL byte after the URL", named(url + "\x00"), nil, 400, verifier.ReasonOtherResource},
		{"leading space", named(" " + url), nil, 400, verifier.ReasonOtherResource},
		{"a long URL", named(url + "?" + strings.Repeat("a", 3000)), nil, 400, verifier.ReasonOtherResource},
		{"resource is a string", `"` + url + `"`, nil, 400, x402.ReasonInvalidPayload},
		{"url is a number", `{"url":5}`, nil, 400, x402.ReasonInvalidPayload},
		{"url twice", `{"url":"` + url + `","url":"https://evil.example/"}`, nil, 400, x402.ReasonInvalidPayload},
		{"the exact URL, asked with a hostile Host", named(url), map[string]string{"Host": "evil.example", "X-Forwarded-Proto": "http"}, 200, ""},
		{"the exact URL", named(url), nil, 200, ""},
		{"no resource", "", nil, 200, ""},
		{"resource null", "null", nil, 200, ""},
		{"a resource without a url", `{"description":"anything"}`, nil, 200, ""},
	}
	before, paid := f.balance(t), 0
	for _, tc := range cases {
		hdr := map[string]string{x402.HeaderPaymentSignature: build(tc.resource)}
		for k, v := range tc.hdr {
			hdr[k] = v
		}
		r := n.Do(t, http.MethodGet, path, nil, hdr)
		if r.Status != tc.status {
			t.Errorf("%s: %d %.300s", tc.name, r.Status, r.Body)
			continue
		}
		if tc.status == http.StatusOK {
			paid++
			continue
		}
		if got := reason(t, r); got != tc.reason || r.ErrorCode() != "INVALID_PARAM" {
			t.Errorf("%s: %s %s, want %s", tc.name, r.ErrorCode(), got, tc.reason)
		}
		if tc.reason == verifier.ReasonOtherResource {
			// The refusal names this request's resource and its terms.
			q, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
			if err != nil || q.Resource.URL != url || !strings.Contains(string(r.Body), "not for this request") {
				t.Errorf("%s: refusal %v %+v %s", tc.name, err, q, r.Body)
			}
		}
	}
	if got := f.balance(t); got != before+uint64(paid)*price {
		t.Fatalf("charged %d, want %d for %d paid", got-before, uint64(paid)*price, paid)
	}
	if rows := ledger(t, n.Store, ""); len(rows) != paid {
		t.Fatalf("%d ledger rows for %d payments: a refused one was claimed", len(rows), paid)
	}
	if got := counter(t, n.reg, "attestd_x402_refused_total", "reason", verifier.ReasonOtherResource); got != 24 {
		t.Errorf("refusals counted %v, want 24", got)
	}
}

// A v1 client pays with X-PAYMENT and is answered in v1 terms.
func TestV1Payment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/forensic-report/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build")
	v1 := x402.PaymentPayloadV1{X402Version: 1, Scheme: "exact", Network: "solana-devnet",
		Payload: x402.ExactPayload{Transaction: encode(wire)}}
	before := f.balance(t)
	r := n.Do(t, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentV1: header(t, v1)})
	if r.Status != http.StatusOK || r.Header.Get(x402.HeaderPaymentResponseV1) == "" || f.balance(t) != before+5*price {
		t.Fatalf("v1 paid: %d %v %s", r.Status, r.Header, r.Body)
	}
	// A wrong v1 network is refused in v1 terms (a new payment: the same
	// one again is the one that bought the report, and gets it again).
	wire, err = x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build")
	v1 = x402.PaymentPayloadV1{X402Version: 1, Scheme: "exact", Network: "solana", Payload: x402.ExactPayload{Transaction: encode(wire)}}
	r = n.Do(t, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentV1: header(t, v1)})
	var body struct {
		X402Version int                   `json:"x402Version"`
		Accepts     []x402.RequirementsV1 `json:"accepts"`
	}
	r.JSON(t, &body)
	if r.Status != http.StatusPaymentRequired || body.X402Version != 1 || body.Accepts[0].MaxAmountRequired != "50000" ||
		body.Accepts[0].Network != "solana-devnet" || r.Header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("v1 refusal: %d %s", r.Status, r.Body)
	}
}
