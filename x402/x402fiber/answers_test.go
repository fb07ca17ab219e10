package x402fiber_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gagliardetto/solana-go"
)

// index writes n new attestations of the fixture's agent, as the indexer
// would: the agent's full history grows.
func (f *fixture) index(t *testing.T, n int, salt uint64) {
	t.Helper()
	var agent *seed.Agent
	for i := range f.env.Seeded.Agents {
		if f.env.Seeded.Agents[i].PDA.String() == f.agent {
			agent = &f.env.Seeded.Agents[i]
		}
	}
	if agent == nil {
		t.Fatalf("agent %s is not a seeded one", f.agent)
	}
	recs := seed.NewAttestations([]seed.Agent{*agent}, n, time.Now(), 50_000_000+salt*1000, 99+salt)
	_, err := f.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs})
	testenv.Must(t, err, "index new attestations")
}

// raw sends a request with exactly these headers (no transparent
// decompression): the bytes on the wire.
func raw(t *testing.T, base, method, path string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	testenv.Must(t, err, "request")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := rawClient.Do(req)
	testenv.Must(t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read")
	return res.StatusCode, res.Header, b
}

var rawClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}

// total is the full history's pagination.total (the body decoded when gzip).
func total(t *testing.T, hdr http.Header, body []byte) int {
	t.Helper()
	if hdr.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		testenv.Must(t, err, "gunzip")
		body, err = io.ReadAll(zr)
		testenv.Must(t, err, "gunzip")
	}
	var b struct {
		Pagination struct{ Total int } `json:"pagination"`
	}
	testenv.Must(t, json.Unmarshal(body, &b), "decode %.200s", body)
	return b.Pagination.Total
}

// responseDigest is the receipt's responseDigest in a PAYMENT-RESPONSE,
// verified under the node's published key.
func responseDigest(t *testing.T, n *paidNode, h string) string {
	t.Helper()
	return decodePaid(t, n, http.StatusOK, http.Header{"Payment-Response": {h}}, nil).payload.ResponseDigest
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func gunzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	testenv.Must(t, err, "gunzip")
	out, err := io.ReadAll(zr)
	testenv.Must(t, err, "gunzip")
	return out
}

// One payment, one answer: a settled payment presented again after new
// data was indexed gets the bytes it bought (their digest the receipt's
// responseDigest), on the node that answered and on another, with the same
// PAYMENT-RESPONSE and headers; never the grown history, which a new
// payment does get. A client that does not accept gzip gets the same
// content decoded.
func TestPresentedAgainGetsTheSameBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.node(t, f.config(), nil), f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	payment := f.wallet(t, a.challenge(t, http.MethodGet, path, nil))
	gz := map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "gzip"}
	st, h1, body1 := raw(t, a.URL, http.MethodGet, path, nil, gz)
	if st != http.StatusOK || h1.Get("Content-Encoding") != "gzip" {
		t.Fatalf("paid: %d %v %.200s", st, h1, body1)
	}
	plain1 := gunzipped(t, body1)
	digest := responseDigest(t, a, h1.Get(x402.HeaderPaymentResponse))
	if sha(plain1) != digest {
		t.Fatalf("first answer: digest %s, receipt %s", sha(plain1), digest)
	}
	before, charged := total(t, h1, body1), f.balance(t)

	f.index(t, 7, 1)
	for i, n := range []*paidNode{a, b, b, a} {
		st, h, body := raw(t, n.URL, http.MethodGet, path, nil, gz)
		if st != http.StatusOK || !bytes.Equal(body, body1) {
			t.Fatalf("presented again (%d): %d, same bytes %v (total %d, bought %d)", i, st, bytes.Equal(body, body1), total(t, h, body), before)
		}
		for _, k := range []string{x402.HeaderPaymentResponse, "Content-Type", "Content-Encoding", "Vary", "Cache-Control", "Access-Control-Expose-Headers"} {
			if h.Get(k) != h1.Get(k) {
				t.Errorf("presented again (%d): %s %q, first %q", i, k, h.Get(k), h1.Get(k))
			}
		}
		if responseDigest(t, n, h.Get(x402.HeaderPaymentResponse)) != sha(plain1) {
			t.Errorf("presented again (%d): the receipt does not name these bytes", i)
		}
	}
	// Without gzip: the same content, decoded.
	st, h, body := raw(t, b.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "identity"})
	if st != http.StatusOK || h.Get("Content-Encoding") != "" || !bytes.Equal(body, plain1) || h.Get(x402.HeaderPaymentResponse) != h1.Get(x402.HeaderPaymentResponse) {
		t.Fatalf("presented again without gzip: %d %q, same content %v", st, h.Get("Content-Encoding"), bytes.Equal(body, plain1))
	}
	if got := f.balance(t); got != charged {
		t.Fatalf("presenting again charged: %d -> %d", charged, got)
	}
	// A new payment buys the new data.
	fresh := f.wallet(t, a.challenge(t, http.MethodGet, path, nil))
	st, h, body = raw(t, b.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: fresh, "Accept-Encoding": "gzip"})
	if st != http.StatusOK || total(t, h, body) != before+7 {
		t.Fatalf("a new payment: %d total %d, want %d", st, total(t, h, body), before+7)
	}
	if got := counter(t, a.reg, "attestd_x402_replays_total") + counter(t, b.reg, "attestd_x402_replays_total"); got != 5 {
		t.Errorf("replays counted %v, want 5", got)
	}
	if got := counter(t, a.reg, "attestd_x402_settled_total") + counter(t, b.reg, "attestd_x402_settled_total"); got != 2 {
		t.Errorf("settled %v, want 2", got)
	}
}

// An answer sent without Content-Encoding (small) is given again as is,
// whatever the request's Accept-Encoding; a POST's body is part of what it
// bought.
func TestPresentedAgainPostAndIdentity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	body := []byte(`{"ids":["` + f.agent + `"]}`)
	payment := f.wallet(t, n.challenge(t, http.MethodPost, bulkPath, body))
	st, h1, b1 := raw(t, n.URL, http.MethodPost, bulkPath, body, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "identity"})
	if st != http.StatusOK || h1.Get("Content-Encoding") != "" {
		t.Fatalf("paid: %d %v %s", st, h1, b1)
	}
	for _, ae := range []string{"gzip", "identity", "br;q=1, gzip;q=0"} {
		st, h, b := raw(t, n.URL, http.MethodPost, bulkPath, body, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": ae})
		if st != http.StatusOK || !bytes.Equal(b, b1) || h.Get(x402.HeaderPaymentResponse) != h1.Get(x402.HeaderPaymentResponse) || h.Get("Content-Encoding") != "" {
			t.Fatalf("presented again (Accept-Encoding %q): %d %s", ae, st, b)
		}
	}
	// Another body: another request.
	st, _, b := raw(t, n.URL, http.MethodPost, bulkPath, []byte(`{"ids":["`+f.agent+`","x"]}`), map[string]string{x402.HeaderPaymentSignature: payment})
	if st != http.StatusConflict || !strings.Contains(string(b), "PAYMENT_REPLAYED") {
		t.Fatalf("another body: %d %s", st, b)
	}
}

// After the answer's retention the same payment is refused with 409,
// naming the window, and never answered anew; the pruner deletes the
// bytes and counts them.
func TestPresentedAfterTheRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config()
	cfg.AnswerRetention = 3 * time.Second
	n := f.node(t, cfg, nil)
	path := "/premium/full-history/" + f.agent + "?limit=3"
	payment := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
	first := n.pay(t, http.MethodGet, path, nil, payment)
	if first.Status != http.StatusOK {
		t.Fatalf("paid: %d %s", first.Status, first.Body)
	}
	charged := f.balance(t)
	if again := n.pay(t, http.MethodGet, path, nil, payment); again.Status != http.StatusOK || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("within the retention: %d", again.Status)
	}
	time.Sleep(3500 * time.Millisecond)
	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusConflict || r.ErrorCode() != "PAYMENT_REPLAYED" || reason(t, r) != verifier.ReasonAnswerExpired ||
		!strings.Contains(string(r.Body), "kept for 3s") || r.Header.Get(x402.HeaderPaymentRequired) == "" {
		t.Fatalf("after the retention: %d %s", r.Status, r.Body)
	}
	p, err := n.v.PruneAnswers(context.Background())
	testenv.Must(t, err, "prune")
	if p.Answers != 1 || p.Bytes == 0 || p.Kept != 0 || counter(t, n.reg, "attestd_x402_answers_pruned_total") != 1 {
		t.Fatalf("pruned %+v", p)
	}
	// Pruned: still 409 (the window named), never a new answer.
	r = n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusConflict || reason(t, r) != verifier.ReasonAnswerExpired || !strings.Contains(string(r.Body), "3s") {
		t.Fatalf("after pruning: %d %s", r.Status, r.Body)
	}
	if f.balance(t) != charged {
		t.Fatal("charged again")
	}
}

// The kept answers have a cap: a payment that would pass it is refused
// before settlement (503, nothing charged, the answer withheld), and the
// same payment buys its answer once room is made.
func TestAnswerStoreFull(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config()
	cfg.AnswerStoreBytes = 1 // nothing fits
	n := f.node(t, cfg, nil)
	path := "/premium/full-history/" + f.agent
	payment := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
	before := f.balance(t)
	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusServiceUnavailable || strings.Contains(string(r.Body), `"data"`) || r.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("store full: %d %s", r.Status, r.Body)
	}
	if f.balance(t) != before || len(ledger(t, n.Store, store.PaymentReleased)) != 1 {
		t.Fatal("a payment refused for a full store was charged or not released")
	}
	// Another node with room: the same payment buys its answer.
	m := f.node(t, f.config(), nil)
	if r := m.pay(t, http.MethodGet, path, nil, payment); r.Status != http.StatusOK || f.balance(t) != before+price {
		t.Fatalf("with room: %d %s", r.Status, r.Body)
	}
}

// A payment presented while its first request is still being answered
// waits for that answer: concurrent presentations of one payment on two
// nodes get one charge and, all of those answered, the same bytes.
func TestConcurrentPresentationsGetOneAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.node(t, f.config(), nil), f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	payment := f.wallet(t, a.challenge(t, http.MethodGet, path, nil))
	before := f.balance(t)
	const n = 6
	bodies, statuses := make([][]byte, n), make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := []*paidNode{a, b}[i%2]
			statuses[i], _, bodies[i] = raw(t, node.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "gzip"})
		}()
	}
	wg.Wait()
	var first []byte
	for i := range statuses {
		switch statuses[i] {
		case http.StatusOK:
			if first == nil {
				first = bodies[i]
			} else if !bytes.Equal(first, bodies[i]) {
				t.Fatalf("two answers for one payment")
			}
		case http.StatusConflict: // still in flight after the wait (a loaded machine)
		default:
			t.Fatalf("statuses %v: %s", statuses, bodies[i])
		}
	}
	if first == nil || f.balance(t) != before+price {
		t.Fatalf("statuses %v, charged %d", statuses, f.balance(t)-before)
	}
}

// Hostile presentations of payments: every case is refused or answered as
// the contract says, none charges twice, none gets another payer's answer.
func TestHostilePresentations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	withExt := func(ext string) string {
		pr := n.challenge(t, http.MethodGet, path, nil)
		q := pr.Accepts[0]
		wire, err := x402.BuildExact(q, x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		p := x402.NewPaymentPayload(pr.Resource, q, wire)
		if ext != "" {
			p.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(ext)}
		}
		return header(t, p)
	}
	// A settled payment with an id, the one the cases reuse.
	owner := withExt(`{"info":{"required":false,"id":"owner_0123456789abcdef"}}`)
	bought := n.pay(t, http.MethodGet, path, nil, owner)
	if bought.Status != http.StatusOK {
		t.Fatalf("owner: %d %s", bought.Status, bought.Body)
	}
	f.index(t, 3, 2)
	cases := []struct {
		name    string
		path    string
		payment func() string
		status  int
		same    bool // the owner's bytes
	}{
		{"same payment", path, func() string { return owner }, 200, true},
		{"same payment, other query", path + "?limit=2", func() string { return owner }, 409, false},
		{"same payment, a query added", path + "?limit=5&offset=0", func() string { return owner }, 409, false},
		{"same payment, other agent", "/premium/full-history/" + f.chain.NewKeypair().PublicKey().String(), func() string { return owner }, 409, false},
		{"same payment, other route", "/premium/forensic-report/" + f.agent, func() string { return owner }, 409, false},
		{"owner's id, another payment", path, func() string { return withExt(`{"info":{"id":"owner_0123456789abcdef"}}`) }, 409, false},
		{"owner's id with a NUL", path, func() string { return withExt(`{"info":{"id":"owner_0123456789abcde\u0000"}}`) }, 400, false},
		{"owner's id in unicode", path, func() string { return withExt(`{"info":{"id":"owner_0123456789abcdé"}}`) }, 400, false},
		{"an id of 129", path, func() string { return withExt(`{"info":{"id":"` + strings.Repeat("a", 129) + `"}}`) }, 400, false},
		{"an id that is a number", path, func() string { return withExt(`{"info":{"id":12345678901234567}}`) }, 400, false},
		{"an id that is an object", path, func() string { return withExt(`{"info":{"id":{"id":"owner_0123456789abcdef"}}}`) }, 400, false},
		{"info missing", path, func() string { return withExt(`{"id":"owner_0123456789abcdef"}`) }, 400, false},
		{"the declaration echoed without an id", path, func() string { return withExt(string(x402.PaymentIdentifierDeclaration)) }, 200, false},
		{"the same payment twice in a row", path, func() string { return owner }, 200, true},
	}
	for _, tc := range cases {
		r := n.pay(t, http.MethodGet, tc.path, nil, tc.payment())
		if r.Status != tc.status {
			t.Errorf("%s: %d %.300s", tc.name, r.Status, r.Body)
			continue
		}
		if tc.same != bytes.Equal(r.Body, bought.Body) {
			t.Errorf("%s: same bytes as the owner's %v, want %v", tc.name, !tc.same, tc.same)
		}
		if r.Status != 200 && strings.Contains(string(r.Body), `"data"`) {
			t.Errorf("%s: a refusal carries content", tc.name)
		}
	}
	if s := ledger(t, n.Store, store.PaymentSettled); len(s) != 2 {
		t.Fatalf("settled rows %d, want 2 (the owner's and the echoed declaration's)", len(s))
	}
}

// One payment, one answer when the terms move: a fleet mid-rollout (three
// nodes on one PostgreSQL and Redis: the old terms, a raised price, a
// rotated fee payer) gives a settled payment presented again the bytes it
// bought on every node (with a payment-identifier and without), never the
// data indexed since and never a second charge, and still refuses it for
// another request; a new payment built for the old terms is refused where
// they no longer hold (nothing charged, no ledger row), and one built for
// the new terms buys the new data.
func TestPresentedAgainAfterTheTermsMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	raised := f.config()
	raised.Prices = map[string]uint64{historyPath: 3 * price, reportPath: 5 * price, bulkPath: 2 * price}
	rotated := f.config()
	rotated.FeePayer = f.chain.NewKeypair()
	f.chain.Fund(rotated.FeePayer.PublicKey(), solana.LAMPORTS_PER_SOL)
	old, up, rot := f.node(t, f.config(), nil), f.node(t, raised, nil), f.node(t, rotated, nil)
	path := "/premium/full-history/" + f.agent
	pr := old.challenge(t, http.MethodGet, path, nil)
	withID := func() string {
		wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		p := x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire)
		p.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(`{"info":{"required":false,"id":"terms_move_0123456789"}}`)}
		return header(t, p)
	}
	payments := map[string]string{"with a payment-identifier": withID(), "without": f.wallet(t, pr)}
	type bought struct {
		hdr  http.Header
		body []byte
	}
	first := map[string]bought{}
	for name, payment := range payments {
		st, h, body := raw(t, old.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "gzip"})
		if st != http.StatusOK {
			t.Fatalf("%s: paid on the old terms: %d %s", name, st, body)
		}
		first[name] = bought{h, body}
	}
	charged, had := f.balance(t), total(t, first["without"].hdr, first["without"].body)
	f.index(t, 5, 3)
	for name, payment := range payments {
		for _, n := range []*paidNode{up, rot, old, rot, up} {
			st, h, body := raw(t, n.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: payment, "Accept-Encoding": "gzip"})
			if st != http.StatusOK || !bytes.Equal(body, first[name].body) {
				t.Fatalf("%s: presented again to a node whose terms moved: %d, the same bytes %v: %.300s", name, st, bytes.Equal(body, first[name].body), body)
			}
			if h.Get(x402.HeaderPaymentResponse) != first[name].hdr.Get(x402.HeaderPaymentResponse) {
				t.Errorf("%s: PAYMENT-RESPONSE %q, first %q", name, h.Get(x402.HeaderPaymentResponse), first[name].hdr.Get(x402.HeaderPaymentResponse))
			}
		}
		// Never for another request, whatever the node.
		for _, n := range []*paidNode{up, rot} {
			if r := n.pay(t, http.MethodGet, path+"?limit=1", nil, payment); r.Status != http.StatusConflict || r.ErrorCode() != "PAYMENT_REPLAYED" {
				t.Errorf("%s: for another request: %d %s", name, r.Status, r.Body)
			}
		}
	}
	if got := f.balance(t); got != charged {
		t.Fatalf("presenting again charged: %d -> %d", charged, got)
	}
	// A new payment for the old terms: refused where they moved.
	for _, n := range []*paidNode{up, rot} {
		fresh := f.wallet(t, old.challenge(t, http.MethodGet, path, nil))
		if r := n.pay(t, http.MethodGet, path, nil, fresh); r.Status != http.StatusPaymentRequired || reason(t, r) != x402.ReasonRequirementsMismatch {
			t.Errorf("a new payment for the old terms: %d %s", r.Status, r.Body)
		}
	}
	if got, rows := f.balance(t), ledger(t, old.Store, ""); got != charged || len(rows) != 2 {
		t.Fatalf("refused payments: balance %d -> %d, %d ledger rows (want 2)", charged, got, len(rows))
	}
	// For the new terms: the new data, at the new price.
	for _, n := range []*paidNode{up, rot} {
		fresh := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
		st, h, body := raw(t, n.URL, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: fresh, "Accept-Encoding": "gzip"})
		if st != http.StatusOK || total(t, h, body) != had+5 {
			t.Fatalf("a new payment for the new terms: %d, total %d (want %d)", st, total(t, h, body), had+5)
		}
	}
	if got := f.balance(t); got != charged+3*price+price {
		t.Fatalf("new payments charged %d, want %d", got-charged, 3*price+price)
	}
	if got := counter(t, up.reg, "attestd_x402_replays_total") + counter(t, rot.reg, "attestd_x402_replays_total"); got != 8 {
		t.Errorf("replays counted on the moved nodes %v, want 8", got)
	}
}
