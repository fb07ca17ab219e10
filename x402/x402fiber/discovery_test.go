package x402fiber_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/openapi"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/getkin/kin-openapi/openapi3"
)

// get fetches a root path of the node (outside /api/v1).
func get(t *testing.T, root, path string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Get(root + path)
	testenv.Must(t, err, "GET %s", path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read %s", path)
	return res, b
}

// requestOf is a concrete request of each payable route.
func requestOf(f *fixture, r verifier.Route) (method, path string, body []byte) {
	p := strings.Replace(r.Path, ":agentId", f.agent, 1)
	if r.Method == http.MethodPost {
		return r.Method, p, []byte(`{"ids":["` + f.agent + `"]}`)
	}
	return r.Method, p, nil
}

// stripHints drops what a 402 adds per request (the blockhash hint).
func stripHints(q x402.Requirements) x402.Requirements {
	if q.Extra != nil {
		e := *q.Extra
		e.RecentBlockhash, e.LastValidBlockHeight = "", ""
		q.Extra = &e
	}
	return q
}

// The 402s, /.well-known/x402, the OpenAPI document's x-x402 and /llms.txt
// say the same of every payable route, from one catalog.
func TestDiscoveryAgreesWithLive402s(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config()
	n := f.node(t, cfg, nil)

	res, wk := get(t, n.Root, x402fiber.PathWellKnown)
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("/.well-known/x402: %d %q %s", res.StatusCode, res.Header.Get("Cache-Control"), wk)
	}
	var doc verifier.Discovery
	testenv.Must(t, json.Unmarshal(wk, &doc), "decode /.well-known/x402")
	if doc.X402Version != 2 || len(doc.Items) != len(verifier.Routes) || len(doc.Resources) != len(verifier.Routes) ||
		doc.Pagination != (x402.DiscoveryPagination{Limit: 20, Offset: 0, Total: len(verifier.Routes)}) {
		t.Fatalf("document %s", wk)
	}
	for _, it := range doc.Items {
		if at, err := time.Parse(time.RFC3339, it.LastUpdated); err != nil || time.Since(at) > time.Hour || at.Location() != time.UTC {
			t.Errorf("lastUpdated %q: %v", it.LastUpdated, err)
		}
	}
	_, llms := get(t, n.Root, x402fiber.PathLLMs)
	_, oas := get(t, n.URL, "/openapi.json")
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	testenv.Must(t, json.Unmarshal(oas, &spec), "decode openapi.json")

	for _, r := range verifier.Routes {
		method, path, body := requestOf(f, r)
		pr := n.challenge(t, method, path, body)
		var item *x402.DiscoveredResource
		for i := range doc.Items {
			if doc.Items[i].Resource == testOrigin.URL(r.APIPath()) {
				item = &doc.Items[i]
			}
		}
		if item == nil {
			t.Fatalf("%s is not in /.well-known/x402", r.Path)
		}
		// Same payment terms.
		if got, want := item.Accepts[0], stripHints(pr.Accepts[0]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: /.well-known/x402 accepts %+v, the 402 %+v", r.Path, got, want)
		}
		// Same bazaar extension, but for the request's path value.
		var live, listed x402.Bazaar
		testenv.Must(t, json.Unmarshal(pr.Extensions[x402.ExtensionBazaar], &live), "402 bazaar")
		testenv.Must(t, json.Unmarshal(item.Extensions[x402.ExtensionBazaar], &listed), "listed bazaar")
		if live.Info.Input.Method != r.Method || live.Info.Output == nil || len(live.Info.Output.Example) < 10 {
			t.Errorf("%s: 402 bazaar %+v", r.Path, live.Info)
		}
		if r.Input.PathParam != "" {
			if live.RouteTemplate != r.APIPath() || live.Info.Input.PathParams[r.Input.PathParam] != f.agent {
				t.Errorf("%s: routeTemplate %q pathParams %v", r.Path, live.RouteTemplate, live.Info.Input.PathParams)
			}
			live.Info.Input.PathParams = listed.Info.Input.PathParams
		}
		// The catalog lists the output's type; its example is in the 402.
		if listed.Info.Output == nil || listed.Info.Output.Type != live.Info.Output.Type || listed.Info.Output.Example != nil {
			t.Errorf("%s: listed output %+v", r.Path, listed.Info.Output)
		}
		listed.Info.Output = live.Info.Output
		if !reflect.DeepEqual(live, listed) {
			t.Errorf("%s: the 402's bazaar and the listed one differ:\n%+v\n%+v", r.Path, live, listed)
		}
		// The served OpenAPI document prices the operation as the 402 does.
		var xp verifier.Price
		var op struct {
			X json.RawMessage `json:"x-x402"`
		}
		testenv.Must(t, json.Unmarshal(spec.Paths[verifier.OpenAPIPath(r.Path)][strings.ToLower(r.Method)], &op), "operation %s", r.Path)
		testenv.Must(t, json.Unmarshal(op.X, &xp), "x-x402 of %s", r.Path)
		q := pr.Accepts[0]
		if xp.Amount != q.Amount || xp.Asset != q.Asset || xp.Network != q.Network || xp.PayTo != q.PayTo || xp.Schemes[0] != q.Scheme {
			t.Errorf("%s: x-x402 %+v, the 402 %+v", r.Path, xp, q)
		}
		// llms.txt names the route, its URL and its price.
		line := r.Method + " " + r.APIPath() + "](" + testOrigin.URL(r.APIPath()) + ")"
		units, _ := q.AmountUnits()
		if !strings.Contains(string(llms), line) || !strings.Contains(string(llms), "Price: "+x402.FormatAmount(units, 6)+" ") {
			t.Errorf("llms.txt does not name %s at its price:\n%s", line, llms)
		}
	}
	if !strings.Contains(string(llms), testOrigin.URL("/.well-known/x402")) || !strings.Contains(string(llms), cfg.PayTo.String()) {
		t.Errorf("llms.txt:\n%s", llms)
	}
}

// /llms.txt's bulk data section sends agents to the daily dataset's files,
// at the node's public origin, and says how to check one.
func TestLLMsTxtBulkData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	res, llms := get(t, n.Root, x402fiber.PathLLMs)
	_, bulk, found := strings.Cut(string(llms), "\n## Bulk data\n")
	if res.StatusCode != http.StatusOK || !found {
		t.Fatalf("/llms.txt: %d, no bulk data section:\n%s", res.StatusCode, llms)
	}
	for _, w := range []string{"[Dataset index](" + testOrigin.URL("/dataset/index.json") + ")", "one Parquet file per UTC day",
		"download the files rather than paging " + testOrigin.URL("/api/v1/attestations"), "`list_datasets`",
		"`attestd verify --dataset YYYY-MM-DD.parquet --url " + testOrigin.String() + " --log-key KEY"} {
		if !strings.Contains(bulk, w) {
			t.Errorf("llms.txt's bulk data section lacks %q:\n%s", w, llms)
		}
	}
}

// The OpenAPI file's x-x402 members are the default configuration's
// prices, from the same catalog (the served document has the live ones).
func TestOpenAPIFilePricesAreTheDefaults(t *testing.T) {
	t.Parallel()
	def, err := verifier.ConfigFromEnv(func(k string) string {
		switch k {
		case "ATTESTD_X402_PAY_TO":
			return "11111111111111111111111111111112"
		case "ATTESTD_X402_FACILITATOR_URL":
			return "https://facilitator.test"
		}
		return ""
	})
	testenv.Must(t, err, "default config")
	doc, err := openapi.Document()
	testenv.Must(t, err, "openapi")
	for key, want := range def.Prices402() {
		method, path, _ := strings.Cut(key, " ")
		op := doc.Paths.Find(path).GetOperation(method)
		raw, ok := op.Extensions[verifier.ExtensionOpenAPI]
		if !ok {
			t.Errorf("%s has no %s", key, verifier.ExtensionOpenAPI)
			continue
		}
		b, _ := json.Marshal(raw)
		var got verifier.Price
		testenv.Must(t, json.Unmarshal(b, &got), "x-x402")
		want.PayTo = "" // the operator's, set in the served document
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: x-x402 in openapi.yaml %+v, want %+v", key, got, want)
		}
	}
}

// The bazaar output examples are real answers (captured by running this
// test with ATTESTD_UPDATE_EXAMPLES=1) and still match the OpenAPI
// document's schema of each route's 200.
func TestExamplesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	if os.Getenv("ATTESTD_UPDATE_EXAMPLES") != "" {
		captureExamples(t)
	}
	doc, err := openapi.Document()
	testenv.Must(t, err, "openapi")
	for _, r := range verifier.Routes {
		op := doc.Paths.Find(verifier.OpenAPIPath(r.Path)).GetOperation(r.Method)
		schema := op.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
		var v any
		testenv.Must(t, json.Unmarshal(r.Example(), &v), "example of %s", r.Path)
		if err := schema.VisitJSON(v, openapi3.MultiErrors()); err != nil {
			t.Errorf("example of %s does not match openapi.yaml (regenerate: ATTESTD_UPDATE_EXAMPLES=1 go test -run TestExamplesMatchOpenAPI ./x402/x402fiber): %v", r.Path, err)
		}
	}
}

// captureExamples pays each route once and keeps its answer, trimmed to
// one record per list, as the route's example.
func captureExamples(t *testing.T) {
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	for _, r := range verifier.Routes {
		method, path, body := requestOf(f, r)
		pr := n.challenge(t, method, path, body)
		res := n.pay(t, method, path, body, f.wallet(t, pr))
		if res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.Status, res.Body)
		}
		var m map[string]any
		testenv.Must(t, json.Unmarshal(res.Body, &m), "decode")
		trim(m)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		testenv.Must(t, enc.Encode(m), "encode")
		testenv.Must(t, os.WriteFile(filepath.Join("..", "verifier", "examples", r.Input.Output), buf.Bytes(), 0o644), "write example")
	}
	t.Log("examples written; rebuild to embed them")
}

// trim keeps the first element of every array.
func trim(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if a, ok := e.([]any); ok && len(a) > 1 {
				x[k] = a[:1]
			}
			trim(x[k])
		}
	case []any:
		for _, e := range x {
			trim(e)
		}
	}
}

type paidAnswer struct {
	status  int
	body    []byte
	resp    *x402.SettleResponse
	jws     string
	payload receipt.Payload
}

func decodePaid(t *testing.T, n *paidNode, status int, header http.Header, body []byte) paidAnswer {
	t.Helper()
	a := paidAnswer{status: status, body: body}
	sr, err := x402.DecodeSettleResponse(header.Get(x402.HeaderPaymentResponse))
	testenv.Must(t, err, "PAYMENT-RESPONSE")
	a.resp = sr
	var ext receipt.ExtensionInfo
	testenv.Must(t, json.Unmarshal(sr.Extensions[receipt.Extension], &ext), "offer-receipt extension: %+v", sr)
	if ext.Info.Receipt.Format != "jws" {
		t.Fatalf("receipt format %q", ext.Info.Receipt.Format)
	}
	a.jws = ext.Info.Receipt.Signature
	// Verified with the key the node publishes.
	_, jwks := get(t, n.Root, "/.well-known/jwks.json")
	var keys receipt.JWKS
	testenv.Must(t, json.Unmarshal(jwks, &keys), "jwks")
	a.payload, err = receipt.Verify(a.jws, keys)
	testenv.Must(t, err, "verify receipt")
	return a
}

// A paid answer carries a receipt signed under the published key, over
// the resource, the request's fingerprint, the answer's digest, amount,
// payer and transaction; presented again, the same payment gets the same
// receipt, and the ledger keeps it.
func TestReceipts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent + "?limit=5"
	pr := n.challenge(t, http.MethodGet, path, nil)
	payment := f.wallet(t, pr)
	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusOK {
		t.Fatalf("paid: %d %s", r.Status, r.Body)
	}
	a := decodePaid(t, n, r.Status, r.Header, r.Body)
	sum := sha256.Sum256(r.Body)
	fp := hex.EncodeToString(verifier.Fingerprint(http.MethodGet, "/api/v1/premium/full-history/"+f.agent, "limit=5", nil))
	want := receipt.Payload{Amount: "10000", Asset: pr.Accepts[0].Asset, IssuedAt: a.payload.IssuedAt, Network: x402.Devnet.CAIP2,
		Payer: f.Payer.PublicKey().String(), PayTo: f.PayTo.String(), RequestDigest: fp,
		ResourceURL: testOrigin.URL("/api/v1/premium/full-history/" + f.agent), ResponseDigest: hex.EncodeToString(sum[:]),
		Transaction: a.resp.Transaction, Version: 1}
	if a.payload != want {
		t.Fatalf("receipt\n got %+v\nwant %+v", a.payload, want)
	}
	again := n.pay(t, http.MethodGet, path, nil, payment)
	if again.Status != http.StatusOK {
		t.Fatalf("presented again: %d %s", again.Status, again.Body)
	}
	if b := decodePaid(t, n, again.Status, again.Header, again.Body); b.jws != a.jws {
		t.Fatalf("presented again, another receipt:\n%s\n%s", b.jws, a.jws)
	}
	row, err := n.Store.PaymentByTransaction(t.Context(), a.resp.Transaction)
	testenv.Must(t, err, "ledger row")
	if row.Receipt != a.jws || row.Status != store.PaymentSettled {
		t.Fatalf("ledger receipt %q status %s", row.Receipt, row.Status)
	}
	// The same payment for another resource: refused, no receipt.
	other := n.pay(t, http.MethodGet, "/premium/forensic-report/"+f.agent, nil, payment)
	if other.Status == http.StatusOK || other.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("a payment replayed on another resource: %d %s", other.Status, other.Body)
	}
}

// payment-identifier: the same identifier (the same payment) twice is one
// charge, the same answer and the same receipt.
func TestPaymentIdentifierChargedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	q := pr.Accepts[0]
	wire, err := x402.BuildExact(q, x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build payment")
	p := x402.NewPaymentPayload(pr.Resource, q, wire)
	p.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(`{"info":{"id":"idem_0123456789abcdef"}}`)}
	h := header(t, p)
	before := f.balance(t)
	first := n.pay(t, http.MethodGet, path, nil, h)
	second := n.pay(t, http.MethodGet, path, nil, h)
	if first.Status != http.StatusOK || second.Status != http.StatusOK || !bytes.Equal(first.Body, second.Body) {
		t.Fatalf("same identifier twice: %d %d, same body %v", first.Status, second.Status, bytes.Equal(first.Body, second.Body))
	}
	a, b := decodePaid(t, n, first.Status, first.Header, first.Body), decodePaid(t, n, second.Status, second.Header, second.Body)
	if a.jws != b.jws || a.resp.Transaction != b.resp.Transaction {
		t.Fatalf("two receipts or transactions for one identifier")
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("charged %d, want %d once", got-before, price)
	}
	if rows := ledger(t, n.Store, ""); len(rows) != 1 {
		t.Fatalf("ledger rows %d", len(rows))
	}
}

// Hostile path values never break a 402's bazaar extension, and the
// discovery documents answer only GET and HEAD, whatever the query.
func TestDiscoveryHostileInputs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	n1 := 0
	for _, id := range []string{`%22%7D%7D%2C%22x%22%3A1`, `%E2%80%A8%3Cscript%3E`, strings.Repeat("1", 65), strings.Repeat("Z", 44),
		`..%2F..%2Fetc`, `%00%01%02`, strings.Repeat("%F0%9F%98%80", 20)} {
		res, err := http.Get(n.URL + "/premium/full-history/" + id)
		testenv.Must(t, err, "GET")
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		n1++
		if res.StatusCode != http.StatusPaymentRequired && res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusNotFound {
			t.Errorf("agent %q: %d", id, res.StatusCode)
			continue
		}
		if h := res.Header.Get(x402.HeaderPaymentRequired); h != "" {
			pr, err := x402.DecodePaymentRequired(h)
			if err != nil {
				t.Errorf("agent %q: PAYMENT-REQUIRED does not decode: %v", id, err)
				continue
			}
			var bz x402.Bazaar
			if err := json.Unmarshal(pr.Extensions[x402.ExtensionBazaar], &bz); err != nil || bz.RouteTemplate == "" {
				t.Errorf("agent %q: bazaar %v %+v", id, err, bz)
			}
			if v := bz.Info.Input.PathParams["agentId"]; len(v) > 64 {
				t.Errorf("agent %q: pathParams echo %d bytes", id, len(v))
			}
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, n.Root+x402fiber.PathWellKnown+"?x="+strings.Repeat("a", 2000), strings.NewReader("{}"))
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "%s", m)
		res.Body.Close()
		n1++
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /.well-known/x402: %d", m, res.StatusCode)
		}
	}
	for _, p := range []string{x402fiber.PathWellKnown + "?a=%ZZ", x402fiber.PathLLMs + "?" + strings.Repeat("q", 4000), x402fiber.PathJWKS, x402fiber.PathDID} {
		res, b := get(t, n.Root, p)
		n1++
		if res.StatusCode != http.StatusOK || len(b) == 0 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	t.Logf("%d hostile discovery requests", n1)
}

// A 402's bytes are reused while nothing they depend on moves: when the
// chain moves on, the next 402s name its new blockhash (the hint is
// refreshed in the background once it is 2 s old); two resources of one
// route never share a challenge.
func TestReused402FollowsHintAndResource(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	first := n.challenge(t, http.MethodGet, path, nil)
	if first.Accepts[0].Extra == nil || first.Accepts[0].Extra.RecentBlockhash != f.chain.LatestBlockhash().String() {
		t.Fatalf("first 402's hint %+v, want %s", first.Accepts[0].Extra, f.chain.LatestBlockhash())
	}
	if again := n.challenge(t, http.MethodGet, path, nil); !reflect.DeepEqual(again, first) {
		t.Fatalf("the same request's 402 changed while nothing moved:\n%+v\n%+v", again, first)
	}
	f.chain.AdvanceSlots(5)
	want := f.chain.LatestBlockhash().String()
	testenv.WaitForState(t, "402s name the chain's new blockhash", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		pr := n.challenge(t, http.MethodGet, path, nil)
		if pr.Accepts[0].Extra.RecentBlockhash != want {
			return false, fmt.Sprintf("402s still name %s, the chain is at %s", pr.Accepts[0].Extra.RecentBlockhash, want)
		}
		if pr.Resource.URL != first.Resource.URL {
			t.Fatalf("resource moved: %s, want %s", pr.Resource.URL, first.Resource.URL)
		}
		return true, ""
	}))
	// Another agent: its own resource and bazaar path value, not the
	// reused bytes of the first.
	var other string
	testenv.Must(t, f.env.Store.Pool().QueryRow(context.Background(),
		"SELECT pda FROM agents WHERE pda <> $1 LIMIT 1", f.agent).Scan(&other), "another agent")
	pr := n.challenge(t, http.MethodGet, "/premium/full-history/"+other, nil)
	if !strings.HasSuffix(pr.Resource.URL, "/premium/full-history/"+other) {
		t.Fatalf("other agent's 402 names %s", pr.Resource.URL)
	}
	var bz struct {
		Info struct {
			Input struct {
				PathParams map[string]string `json:"pathParams"`
			} `json:"input"`
		} `json:"info"`
	}
	testenv.Must(t, json.Unmarshal(pr.Extensions[x402.ExtensionBazaar], &bz), "bazaar")
	if bz.Info.Input.PathParams["agentId"] != other {
		t.Fatalf("other agent's bazaar pathParams %v", bz.Info.Input.PathParams)
	}
}

// The same unpaid GET again is answered the first 402's bytes without
// being validated again; anything else takes the whole path: another
// query is validated (and refused when invalid), a payment is verified.
// Every 402 is counted.
func TestRepeatedUnpaidGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	first := n.Do(t, http.MethodGet, path, nil, nil)
	if first.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid: %d %s", first.Status, first.Body)
	}
	for i := range 5 {
		again := n.Do(t, http.MethodGet, path, nil, nil)
		if again.Status != http.StatusPaymentRequired || !bytes.Equal(again.Body, first.Body) ||
			again.Header.Get(x402.HeaderPaymentRequired) != first.Header.Get(x402.HeaderPaymentRequired) ||
			again.Header.Get("Cache-Control") != "no-store" || again.Header.Get("Content-Type") != "application/json" ||
			again.Header.Get("Access-Control-Expose-Headers") != x402.HeaderPaymentRequired {
			t.Fatalf("repeat %d: %d, same body %v, same header %v, %q %q %q", i, again.Status, bytes.Equal(again.Body, first.Body),
				again.Header.Get(x402.HeaderPaymentRequired) == first.Header.Get(x402.HeaderPaymentRequired),
				again.Header.Get("Cache-Control"), again.Header.Get("Content-Type"), again.Header.Get("Access-Control-Expose-Headers"))
		}
	}
	if got := counter(t, n.reg, "attestd_x402_refused_total", "reason", verifier.ReasonMissing); got != 6 {
		t.Fatalf("%v unpaid 402s counted, want 6", got)
	}
	// Another query of the same route is validated: an invalid one is 400
	// even while the valid one's 402 is held.
	for _, q := range []string{"?limit=0", "?limit=x", "?nope=1", "?offset=-1"} {
		if r := n.Do(t, http.MethodGet, path+q, nil, nil); r.Status != http.StatusBadRequest {
			t.Errorf("%s after a held 402: %d %s", q, r.Status, r.Body)
		}
		if r := n.Do(t, http.MethodGet, path, nil, nil); r.Status != http.StatusPaymentRequired || !bytes.Equal(r.Body, first.Body) {
			t.Errorf("unpaid again after %s: %d %s", q, r.Status, r.Body)
		}
	}
	// A payment on the same request line is verified, never answered the
	// held 402: garbage is refused as garbage (400), a real payment paid.
	for _, h := range []string{x402.HeaderPaymentSignature, x402.HeaderPaymentV1} {
		if r := n.Do(t, http.MethodGet, path, nil, map[string]string{h: "not-base64!"}); r.Status != http.StatusBadRequest {
			t.Errorf("%s garbage on a held 402's request: %d %s", h, r.Status, r.Body)
		}
	}
	// Raw requests on the held 402's path: another request-target form
	// (absolute, naming another host) or HTTP/1.0 is the whole path and
	// names the configured origin; a payment header in lower case is a
	// payment.
	host := strings.TrimPrefix(n.Root, "http://")
	for _, tc := range []struct{ line, header, want string }{
		{"GET http://evil.example/api/v1" + path + " HTTP/1.1", "", " 402 "},
		{"GET /api/v1" + path + " HTTP/1.0", "", " 402 "},
		{"GET /api/v1" + path + " HTTP/1.1", "payment-signature: garbage!\r\n", " 400 "},
		{"GET /api/v1" + path + " HTTP/1.1", "x-payment: garbage!\r\n", " 400 "},
	} {
		resp := rawRequest(t, host, tc.line+"\r\nHost: "+host+"\r\n"+tc.header+"Connection: close\r\n\r\n")
		if !strings.Contains(strings.SplitN(resp, "\r\n", 2)[0], tc.want) || strings.Contains(resp, "evil.example") {
			t.Errorf("%q %q: %.200s", tc.line, tc.header, resp)
		}
	}
	pr, err := x402.DecodePaymentRequired(first.Header.Get(x402.HeaderPaymentRequired))
	testenv.Must(t, err, "decode")
	paid := n.pay(t, http.MethodGet, path, nil, f.wallet(t, pr))
	if paid.Status != http.StatusOK {
		t.Fatalf("paid on a held 402's request: %d %s", paid.Status, paid.Body)
	}
}

// rawRequest writes req on a new connection to host and reads the answer.
func rawRequest(t *testing.T, host, req string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	testenv.Must(t, err, "dial")
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, req)
	testenv.Must(t, err, "write")
	b, _ := io.ReadAll(io.LimitReader(conn, 1<<20))
	return string(b)
}

// /.well-known/x402 pages as GET /discovery/resources does (limit,
// offset, type); malformed paging is 400, other parameters are ignored.
func TestDiscoveryPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	all := len(verifier.Routes)
	cases := []struct {
		query         string
		status        int
		limit, offset int
		items         int
	}{
		{"", 200, 20, 0, all},
		{"?limit=1", 200, 1, 0, 1},
		{"?limit=1&offset=1", 200, 1, 1, 1},
		{"?offset=2&limit=100", 200, 100, 2, all - 2},
		{"?offset=99", 200, 20, 99, 0},
		{"?offset=1000000", 200, 20, 1000000, 0},
		{"?limit=500", 200, 100, 0, all},
		{"?type=http", 200, 20, 0, all},
		{"?type=mcp", 400, 0, 0, 0},
		{"?type=", 400, 0, 0, 0},
		{"?type=HTTP", 400, 0, 0, 0},
		{"?v=123&metadata[provider]=x", 200, 20, 0, all},
		{"?limit=0", 400, 0, 0, 0},
		{"?limit=-1", 400, 0, 0, 0},
		{"?limit=1.5", 400, 0, 0, 0},
		{"?limit=", 400, 0, 0, 0},
		{"?limit=99999999", 400, 0, 0, 0},
		{"?offset=-1", 400, 0, 0, 0},
		{"?offset=1000001", 400, 0, 0, 0},
		{"?offset=%00", 400, 0, 0, 0},
		{"?limit=%EF%BC%91", 400, 0, 0, 0}, // a fullwidth digit
		{"?limit=1&limit=2", 400, 0, 0, 0},
		{"?type=http&type=mcp", 400, 0, 0, 0},
	}
	for _, tc := range cases {
		res, b := get(t, n.Root, x402fiber.PathWellKnown+tc.query)
		if res.StatusCode != tc.status {
			t.Errorf("%q: %d %s", tc.query, res.StatusCode, b)
			continue
		}
		if tc.status != 200 {
			if !strings.Contains(string(b), "INVALID_PARAM") {
				t.Errorf("%q: %s", tc.query, b)
			}
			continue
		}
		var doc verifier.Discovery
		testenv.Must(t, json.Unmarshal(b, &doc), "decode %q", tc.query)
		total := all
		if doc.Items == nil {
			t.Errorf("%q: items is null; an empty page is []", tc.query)
		}
		if doc.Pagination != (x402.DiscoveryPagination{Limit: tc.limit, Offset: tc.offset, Total: total}) || len(doc.Items) != tc.items ||
			len(doc.Resources) != all {
			t.Errorf("%q: pagination %+v, %d items", tc.query, doc.Pagination, len(doc.Items))
		}
	}
	t.Logf("%d discovery paging cases", len(cases))
}

// A node with its MCP endpoint lists the endpoint's paid tools in
// /.well-known/x402 (type mcp, after the routes, at the endpoint's URL,
// each at the price of the route it calls, with the tool's bazaar: its
// inputSchema as the MCP server lists it), pages them by type, keeps
// resources to the routes, and says in /llms.txt how to call and pay
// them.
func TestDiscoveryListsMCPTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config()
	ep, err := mcp.Endpoint()
	testenv.Must(t, err, "MCP endpoint")
	n := f.env.StartNode(t, apptest.NodeOptions{Routes: func(api *app.API) {
		v, err := verifier.New(context.Background(), verifier.Deps{Config: cfg, Ledger: f.env.Store, Logger: apptest.Logger()})
		testenv.Must(t, err, "verifier")
		t.Cleanup(v.Close)
		d, err := x402fiber.NewDiscovery(v, testOrigin, x402fiber.WithMCP(ep))
		testenv.Must(t, err, "discovery")
		d.Routes(api)
	}})
	res, b := get(t, n.Root, x402fiber.PathWellKnown)
	var doc verifier.Discovery
	testenv.Must(t, json.Unmarshal(b, &doc), "decode %d %s", res.StatusCode, b)
	routes, tools := len(verifier.Routes), len(mcp.PremiumTools)
	if len(doc.Items) != routes+tools || len(doc.Resources) != routes || doc.Pagination.Total != routes+tools ||
		!strings.Contains(doc.Instructions, testOrigin.URL("/mcp")) {
		t.Fatalf("document %s", b)
	}
	for i, tool := range ep.Paid {
		it := doc.Items[routes+i]
		r, _ := verifier.RouteOf(tool.Route)
		var route *x402.DiscoveredResource
		for j := range doc.Items[:routes] {
			if doc.Items[j].Resource == testOrigin.URL(r.APIPath()) {
				route = &doc.Items[j]
			}
		}
		var bz verifier.MCPBazaar
		testenv.Must(t, json.Unmarshal(it.Extensions[x402.ExtensionBazaar], &bz), "bazaar of %s", tool.Name)
		in := bz.Info.Input
		if route == nil || it.Type != "mcp" || it.Resource != testOrigin.URL("/mcp") || it.Metadata["toolName"] != mcp.PremiumTools[i] ||
			it.Metadata["paidRoute"] != r.APIPath() || !reflect.DeepEqual(it.Accepts, route.Accepts) || in.Type != "mcp" ||
			in.ToolName != tool.Name || in.Transport != "streamable-http" || string(in.InputSchema) != string(tool.InputSchema) || bz.RouteTemplate != "" {
			t.Errorf("%s: item %+v, bazaar %s", tool.Name, it, it.Extensions[x402.ExtensionBazaar])
		}
	}
	for q, want := range map[string]int{"?type=mcp": tools, "?type=http": routes, "?type=mcp&limit=1&offset=2": 1, "?type=sse": -1} {
		res, b := get(t, n.Root, x402fiber.PathWellKnown+q)
		var page verifier.Discovery
		if want < 0 {
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "http or mcp") {
				t.Errorf("%s: %d %s", q, res.StatusCode, b)
			}
			continue
		}
		testenv.Must(t, json.Unmarshal(b, &page), "decode %s", q)
		if res.StatusCode != http.StatusOK || len(page.Items) != want || len(page.Resources) != routes {
			t.Errorf("%s: %d, %d items", q, res.StatusCode, len(page.Items))
		}
	}
	_, llms := get(t, n.Root, x402fiber.PathLLMs)
	_, section, ok := strings.Cut(string(llms), "\n## MCP\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok || strings.Contains(string(llms), "`attestd mcp --http`") {
		t.Fatalf("llms.txt:\n%s", llms)
	}
	for _, w := range append(mcp.ToolNames(), testOrigin.URL("/mcp"), "2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26",
		"`get_forensic_report` 0.05 USDC", "`get_full_history` 0.01 USDC", "`bulk_verify` 0.02 USDC", "x402/payment", "Authorization: Bearer", "per-IP") {
		if !strings.Contains(section, w) {
			t.Errorf("llms.txt's MCP section lacks %q:\n%s", w, section)
		}
	}
}
