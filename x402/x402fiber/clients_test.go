package x402fiber_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Go client pays when given a payer, within its maximum price, and
// records what each call cost.
func TestGoClientPays(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	ctx := context.Background()
	// Without a payer: the 402 comes back as an error.
	plain, err := client.New(n.Root)
	testenv.Must(t, err, "client")
	if _, err := plain.FullHistory(ctx, f.agent, client.HistoryParams{}); client.StatusOf(err) != 402 {
		t.Fatalf("no payer: %v", err)
	}
	c, err := client.New(n.Root, client.WithPayer(client.Payer{Key: f.Payer, MaxAmount: 30_000}))
	testenv.Must(t, err, "client")
	before := f.balance(t)
	var rec client.Receipts
	h, err := c.FullHistory(client.RecordPayments(ctx, &rec), f.agent, client.HistoryParams{Limit: 5})
	if err != nil || len(h.Data) != 5 {
		t.Fatalf("paid history: %v", err)
	}
	res, err := c.BulkVerify(client.RecordPayments(ctx, &rec), []string{h.Data[0].PDA})
	if err != nil || res.Summary.Total != 1 {
		t.Fatalf("paid bulk verify: %v", err)
	}
	all := rec.All()
	if len(all) != 2 || all[0].Amount != price || all[1].Amount != 2*price || all[0].Transaction == "" || all[0].Display() != "0.01 USDC" {
		t.Fatalf("receipts %+v", all)
	}
	if got := f.balance(t); got != before+3*price {
		t.Fatalf("payTo %d -> %d", before, got)
	}
	// The report costs 0.05: above the maximum, so nothing is paid.
	_, err = c.ForensicReport(ctx, f.agent, client.ReportParams{})
	if client.StatusOf(err) != 402 || !errors.Is(err, client.ErrPaymentRefused) || !strings.Contains(err.Error(), "above the payer's maximum") {
		t.Fatalf("dear report: %v", err)
	}
	if f.balance(t) != before+3*price {
		t.Fatal("paid above the maximum")
	}
}

// attestd mcp with a payer keypair pays for premium tools within its
// session cap, says what each call cost, and refuses past the cap.
func TestMCPPaysWithinCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	srv, err := mcp.New(mcp.Config{APIURL: n.Root, Payer: f.Payer, SpendCap: 35_000, MaxPrice: 100_000, Timeout: 20 * time.Second})
	testenv.Must(t, err, "mcp")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	testenv.Must(t, err, "server connect")
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	testenv.Must(t, err, "client connect")
	t.Cleanup(func() { cs.Close() })
	call := func(name string, args any) (string, bool) {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
		testenv.Must(t, err, "call %s", name)
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n"), res.IsError
	}
	before := f.balance(t)
	text, isErr := call(mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent, "limit": 3})
	if isErr || !strings.Contains(text, "Paid 0.01 USDC (transaction ") || !strings.Contains(text, "Spent this session: 0.01 of 0.035 USDC") {
		t.Fatalf("first paid call: %v %s", isErr, text)
	}
	text, isErr = call(mcp.ToolBulkVerify, map[string]any{"ids": []string{f.agent}})
	if isErr || !strings.Contains(text, "Spent this session: 0.03 of 0.035 USDC") {
		t.Fatalf("second paid call: %v %s", isErr, text)
	}
	// 0.01 more would pass 0.035: refused before any payment.
	text, isErr = call(mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent})
	if !isErr || !strings.Contains(text, "spending cap") || !strings.Contains(text, "did not pay") {
		t.Fatalf("past the cap: %v %s", isErr, text)
	}
	// A call whose answer is an error costs nothing and uses no budget.
	text, isErr = call(mcp.ToolGetFullHistory, map[string]any{"agentPda": f.chain.NewKeypair().PublicKey().String()})
	if !isErr || strings.Contains(text, "Paid") {
		t.Fatalf("unknown agent: %v %s", isErr, text)
	}
	if got := f.balance(t); got != before+3*price {
		t.Fatalf("payTo %d -> %d, want +%d", before, got, 3*price)
	}
}

// The Go client verifies each paid answer's receipt under the service's
// published key and against the answer it came with; a receipt forged on
// the way (another key under the service's kid, or one for another
// transaction) is reported, never taken as genuine.
func TestGoClientVerifiesReceipts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	ctx := context.Background()
	c, err := client.New(n.Root, client.WithPayer(client.Payer{Key: f.Payer, MaxAmount: 30_000}))
	testenv.Must(t, err, "client")
	var rec client.Receipts
	_, err = c.FullHistory(client.RecordPayments(ctx, &rec), f.agent, client.HistoryParams{Limit: 2})
	testenv.Must(t, err, "paid history")
	got := rec.All()[0]
	if got.Signed == "" || got.ReceiptErr != nil || got.Claims == nil || got.Claims.Transaction != got.Transaction ||
		got.Claims.Amount != "10000" || got.Claims.Payer != f.Payer.PublicKey().String() {
		t.Fatalf("receipt %+v (claims %+v)", got, got.Claims)
	}
	if _, err := c.VerifyReceipt(ctx, got.Signed); err != nil {
		t.Fatalf("VerifyReceipt: %v", err)
	}

	// A proxy that rewrites the receipt in PAYMENT-RESPONSE.
	forger, err := receipt.NewSigner(ed25519.NewKeyFromSeed(make([]byte, 32)), testOrigin) // not the node's key
	testenv.Must(t, err, "forger")
	var forge atomic.Value
	target, _ := url.Parse(n.Root)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(res *http.Response) error {
		h := res.Header.Get(x402.HeaderPaymentResponse)
		if h == "" {
			return nil
		}
		sr, err := x402.DecodeSettleResponse(h)
		if err != nil {
			return err
		}
		jws := forge.Load().(func(receipt.Payload) string)(receipt.Payload{Amount: "1", Asset: sr.Network, IssuedAt: 1, Network: sr.Network,
			Payer: sr.Payer, PayTo: "x", RequestDigest: strings.Repeat("0", 64), ResourceURL: "https://attestd.test/api/v1/premium/full-history/" + f.agent,
			ResponseDigest: strings.Repeat("0", 64), Transaction: sr.Transaction, Version: 1})
		b, _ := json.Marshal(receipt.Wrap(jws))
		sr.Extensions = map[string]json.RawMessage{receipt.Extension: b}
		enc, _ := x402.EncodeHeader(sr)
		res.Header.Set(x402.HeaderPaymentResponse, enc)
		return nil
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	pc, err := client.New(ps.URL, client.WithPayer(client.Payer{Key: f.Payer, MaxAmount: 30_000}))
	testenv.Must(t, err, "proxied client")
	for name, sign := range map[string]func(receipt.Payload) string{
		// Signed by another key but naming the node's kid.
		"another key": func(p receipt.Payload) string {
			s, _ := forger.Sign(p)
			parts := strings.SplitN(s, ".", 2)
			hdr, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": n.signer.KeyID()})
			return base64.RawURLEncoding.EncodeToString(hdr) + "." + parts[1]
		},
		// Genuinely signed by the node's key, but about another answer.
		"another answer": func(p receipt.Payload) string {
			s, _ := receipt.NewSigner(receiptKey, testOrigin)
			jws, _ := s.Sign(p)
			return jws
		},
		"garbage": func(receipt.Payload) string { return "a.b.c" },
	} {
		forge.Store(sign)
		var rec client.Receipts
		if _, err := pc.FullHistory(client.RecordPayments(ctx, &rec), f.agent, client.HistoryParams{Limit: 1}); err != nil {
			t.Fatalf("%s: paid call: %v", name, err)
		}
		r := rec.All()[0]
		if r.Claims != nil || !errors.Is(r.ReceiptErr, client.ErrBadReceipt) {
			t.Errorf("%s: forged receipt accepted: claims %+v err %v", name, r.Claims, r.ReceiptErr)
		}
	}
}
