package x402fiber_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
)

// listenAt binds a loopback port first, so a node's public origin
// (ATTESTD_PUBLIC_URL) is its real address, as an agent reaches it.
func listenAt(t *testing.T) (net.Listener, config.Origin) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	o, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(t, err, "origin")
	return ln, o
}

func (f *fixture) keyFile(t *testing.T) string {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "payer.json")
	testenv.Must(t, devnet.WriteKeypair(keyFile, f.Payer), "keypair file")
	return keyFile
}

func runNode(t *testing.T, dir string, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	testenv.Must(t, err, "node %s: %s", args[0], stderr.String())
	testenv.Must(t, json.Unmarshal(b, out), "decode %s", b)
}

// The official TypeScript client, knowing only the origin, discovers the
// full-history resource in /.well-known/x402, pays it, and verifies the
// receipt with jose against the origin's JWKS.
func TestOfficialClientDiscoversPaysAndVerifiesReceipt(t *testing.T) {
	t.Parallel()
	dir := tsClient(t)
	f := newFixture(t)
	ln, origin := listenAt(t)
	n := f.nodeAt(t, f.config(), nil, true, ln, origin)
	var r struct {
		Status   int                  `json:"status"`
		URL      string               `json:"url"`
		Accepts  []x402.Requirements  `json:"accepts"`
		Settle   *x402.SettleResponse `json:"settle"`
		Format   string               `json:"receiptFormat"`
		Verified *struct {
			Header map[string]string `json:"header"`
			Claims receipt.Payload   `json:"claims"`
		} `json:"verified"`
		Error      string `json:"error"`
		BodyDigest string `json:"bodyDigest"`
	}
	before := f.balance(t)
	runNode(t, dir, &r, "discover.mjs", origin.String(), f.chain.RPCURL(), f.keyFile(t), f.agent)
	if r.Status != 200 || r.URL != n.Root+"/api/v1/premium/full-history/"+f.agent || r.Settle == nil || !r.Settle.Success {
		t.Fatalf("discovered and paid: %+v", r)
	}
	if r.Format != "jws" || r.Verified == nil || r.Error != "" {
		t.Fatalf("jose did not verify the receipt: format %q error %s", r.Format, r.Error)
	}
	c := r.Verified.Claims
	if r.Verified.Header["alg"] != "EdDSA" || r.Verified.Header["kid"] != n.signer.KeyID() ||
		c.Transaction != r.Settle.Transaction || c.ResponseDigest != r.BodyDigest || c.Amount != r.Accepts[0].Amount ||
		c.Payer != f.Payer.PublicKey().String() || c.ResourceURL != r.URL {
		t.Fatalf("receipt %+v header %v, settle %+v digest %s", c, r.Verified.Header, r.Settle, r.BodyDigest)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("payTo %d -> %d", before, got)
	}
}

// attestd mcp --http speaks the x402 MCP transport: the official MCP
// TypeScript SDK client gets the payment requirements as a tool error,
// pays with the official x402 client in _meta["x402/payment"] (forwarded
// to the API, which verifies and settles through the facilitator), and
// gets the settlement and its receipt in _meta["x402/payment-response"];
// the same payment again is not charged again; a malformed payment is a
// clear tool error.
func TestMCPPaymentsOverHTTP(t *testing.T) {
	t.Parallel()
	dir := tsClient(t)
	f := newFixture(t)
	s := f.facilitator(t)
	ln, origin := listenAt(t)
	n := f.nodeAt(t, f.facilitatorConfig(s), nil, true, ln, origin)
	srv, err := mcp.New(mcp.Config{APIURL: n.Root})
	testenv.Must(t, err, "mcp server")
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "mcp listen")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, mln) }()
	t.Cleanup(func() { cancel(); <-done })

	var r struct {
		Unpaid struct {
			IsError     bool                `json:"isError"`
			X402Version int                 `json:"x402Version"`
			Accepts     []x402.Requirements `json:"accepts"`
			TextMatches bool                `json:"textMatches"`
		} `json:"unpaid"`
		Paid struct {
			IsError bool                 `json:"isError"`
			HasData bool                 `json:"hasData"`
			Settle  *x402.SettleResponse `json:"settle"`
		} `json:"paid"`
		Again struct {
			IsError bool                 `json:"isError"`
			Settle  *x402.SettleResponse `json:"settle"`
		} `json:"again"`
		Hostile struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"hostile"`
		Verified *receipt.Payload `json:"verified"`
		Error    string           `json:"error"`
	}
	before := f.balance(t)
	runNode(t, dir, &r, "mcp.mjs", "http://"+mln.Addr().String()+"/mcp", origin.String(), f.chain.RPCURL(), f.keyFile(t), f.agent)
	if !r.Unpaid.IsError || r.Unpaid.X402Version != 2 || len(r.Unpaid.Accepts) != 1 || !r.Unpaid.TextMatches ||
		r.Unpaid.Accepts[0].Extra == nil || r.Unpaid.Accepts[0].Extra.FeePayer != s.key.PublicKey().String() {
		t.Fatalf("unpaid call: %+v", r.Unpaid)
	}
	if r.Paid.IsError || !r.Paid.HasData || r.Paid.Settle == nil || !r.Paid.Settle.Success || r.Paid.Settle.Transaction == "" {
		t.Fatalf("paid call: %+v", r.Paid)
	}
	if r.Again.IsError || r.Again.Settle == nil || r.Again.Settle.Transaction != r.Paid.Settle.Transaction {
		t.Fatalf("the same payment again: %+v", r.Again)
	}
	if !r.Hostile.IsError || !strings.Contains(r.Hostile.Text, "x402/payment") || !strings.Contains(r.Hostile.Text, "nothing was charged") {
		t.Fatalf("malformed payment: %+v", r.Hostile)
	}
	if r.Verified == nil || r.Error != "" || r.Verified.Transaction != r.Paid.Settle.Transaction {
		t.Fatalf("receipt: %+v %s", r.Verified, r.Error)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("payTo %d -> %d, want one charge of %d", before, got, price)
	}
	if rows := ledger(t, n.Store, store.PaymentSettled); len(rows) != 1 || s.settles.Load() != 1 {
		t.Fatalf("ledger %+v settles %d", rows, s.settles.Load())
	}
}

// Hostile payments over the MCP transport are clear tool errors (or a 413
// for an oversized request), never a charge, a panic or an answer.
func TestMCPHostilePayments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	srv, err := mcp.New(mcp.Config{APIURL: n.Root})
	testenv.Must(t, err, "mcp server")
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "post")
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	call := func(tool, args, meta string) (int, string) {
		return post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
			`,"_meta":{"x402/payment":` + meta + `}}}`)
	}
	hist := `{"agentPda":"` + f.agent + `"}`
	// A genuine payment for the full history, to replay elsewhere.
	pr := n.challenge(t, http.MethodGet, "/premium/full-history/"+f.agent, nil)
	wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build")
	genuine, _ := json.Marshal(x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire))
	before := f.balance(t)
	cases := []struct {
		name, tool, args, meta string
		want                   []string
	}{
		{"string", mcp.ToolGetFullHistory, hist, `"abc"`, []string{`"isError":true`, "want a PaymentPayload object"}},
		{"number", mcp.ToolGetFullHistory, hist, `12`, []string{`"isError":true`, "PaymentPayload object"}},
		{"null", mcp.ToolGetFullHistory, hist, `null`, []string{`"isError":true`}},
		{"empty object", mcp.ToolGetFullHistory, hist, `{}`, []string{`"isError":true`, "nothing was charged"}},
		{"v1", mcp.ToolGetFullHistory, hist, `{"x402Version":1,"accepted":{},"payload":{"transaction":"AA=="}}`, []string{`"isError":true`, "invalid_x402_version"}},
		{"huge", mcp.ToolGetFullHistory, hist, `{"x402Version":2,"pad":"` + strings.Repeat("A", 200_000) + `"}`, []string{`"isError":true`, "at most"}},
		{"deep", mcp.ToolGetFullHistory, hist, strings.Repeat(`{"a":`, 3000) + `1` + strings.Repeat(`}`, 3000), []string{"nesting depth"}},
		{"bad transaction", mcp.ToolGetFullHistory, hist, `{"x402Version":2,"accepted":` + mustJSON(pr.Accepts[0]) + `,"payload":{"transaction":"!!!"}}`, []string{`"isError":true`, "not standard base64", "nothing was charged"}},
		{"replayed on another resource", mcp.ToolBulkVerify, `{"ids":["` + f.agent + `"]}`, string(genuine), []string{`"isError":true`, `\"x402Version\":2`, "invalid_payment_resource"}},
	}
	for _, c := range cases {
		status, body := call(c.tool, c.args, c.meta)
		// Nesting past 1000 is refused by the MCP SDK itself: a protocol
		// error (400) naming it.
		if c.name == "deep" && status == http.StatusBadRequest {
			status = http.StatusOK
		}
		if status != http.StatusOK {
			t.Errorf("%s: HTTP %d %.300s", c.name, status, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: answer lacks %q: %.400s", c.name, w, body)
			}
		}
		if strings.Contains(body, `"pagination"`) || strings.Contains(body, "x402/payment-response") {
			t.Errorf("%s: an answer or settlement leaked: %.300s", c.name, body)
		}
	}
	if status, _ := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_stats","arguments":{"pad":"` + strings.Repeat("A", 2<<20) + `"}}}`); status != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB request: %d", status)
	}
	if got := f.balance(t); got != before {
		t.Fatalf("hostile payments moved money: %d -> %d", before, got)
	}
	t.Logf("%d hostile MCP payments refused", len(cases)+1)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
