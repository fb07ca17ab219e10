package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
)

// rpcResult is a tools/call answer as it travels.
type rpcResult struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
}

// mcpPoster posts raw JSON-RPC to a streamable-HTTP MCP handler, with hc
// (nil: http.DefaultClient) and header added.
type mcpPoster struct {
	url    string
	hc     *http.Client
	header http.Header
}

func (p mcpPoster) post(t *testing.T, body string) (int, string) {
	t.Helper()
	res, b := p.exchange(t, http.MethodPost, body)
	return res.StatusCode, b
}

// exchange sends body with method and returns the response (its body
// read and closed) and the body.
func (p mcpPoster) exchange(t *testing.T, method, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.url, strings.NewReader(body))
	testenv.Must(t, err, "request")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range p.header {
		req.Header[k] = vs
	}
	hc := p.hc
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	testenv.Must(t, err, "post")
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read answer")
	return res, string(b)
}

// call posts tools/call of tool with args (JSON) and, when meta is not
// "", _meta["x402/payment"] = meta (JSON, sent as is).
func (p mcpPoster) call(t *testing.T, tool, args, meta string) (int, string, *rpcResult) {
	t.Helper()
	params := `{"name":"` + tool + `","arguments":` + args
	if meta != "" {
		params += `,"_meta":{"x402/payment":` + meta + `}`
	}
	status, body := p.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}}`)
	var r rpcResult
	if status == http.StatusOK {
		testenv.Must(t, json.Unmarshal([]byte(body), &r), "decode %.300s", body)
	}
	return status, body, &r
}

// paymentError checks that r is the transport's payment error (see
// mcp.paymentError) and returns its PaymentRequired: one text content
// holding {"x402/error": {code: 402, message, data}} and, at the top
// level, the same PaymentRequired; no structuredContent; message and
// data.error equal and holding want.
func paymentError(t *testing.T, what string, r *rpcResult, want ...string) *x402.PaymentRequired {
	t.Helper()
	if r.Error != nil || r.Result == nil {
		t.Fatalf("%s: not a tool result: %+v", what, r.Error)
	}
	res := r.Result
	if !res.IsError || len(res.StructuredContent) != 0 || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("%s: isError %v, structuredContent %s, content %+v", what, res.IsError, res.StructuredContent, res.Content)
	}
	var w struct {
		Wrapper *struct {
			Code    int                   `json:"code"`
			Message string                `json:"message"`
			Data    *x402.PaymentRequired `json:"data"`
		} `json:"x402/error"`
	}
	text := res.Content[0].Text
	testenv.Must(t, json.Unmarshal([]byte(text), &w), "%s: content[0].text %.300s", what, text)
	var direct x402.PaymentRequired
	testenv.Must(t, json.Unmarshal([]byte(text), &direct), "%s: content[0].text as a PaymentRequired", what)
	if w.Wrapper == nil || w.Wrapper.Code != mcp.ErrorCode || w.Wrapper.Data == nil {
		t.Fatalf("%s: no %s wrapper: %.300s", what, mcp.ErrorKey, text)
	}
	pr := w.Wrapper.Data
	if pr.X402Version != 2 || len(pr.Accepts) != 1 || pr.Accepts[0].Extra == nil || pr.Resource.URL == "" ||
		!reflect.DeepEqual(&direct, pr) || w.Wrapper.Message != pr.Error || pr.Error == "" {
		t.Fatalf("%s: wrapper %+v, top level %+v", what, w.Wrapper, direct)
	}
	for _, s := range want {
		if !strings.Contains(pr.Error, s) {
			t.Errorf("%s: error %q lacks %q", what, pr.Error, s)
		}
	}
	return pr
}

// TestPaymentErrorsHostile throws hostile payments at the x402 MCP
// transport over HTTP (a real paying node and the chain simulator behind
// it): every one is the transport's payment error, or a tool error for
// what is not about payment, or the SDK's own refusal; never a protocol
// error from this server, an answer, a settlement or a charge; the
// same payment presented at once from many callers is charged once.
func TestPaymentErrorsHostile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30)
	w := newWallets(t)
	node := f.payingNode(t, w.config(10*time.Second))
	srv, err := mcp.New(mcp.Config{APIURL: node.Root})
	testenv.Must(t, err, "mcp.New")
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	p := mcpPoster{url: h.URL}
	hist := `{"agentPda":"` + f.agent + `"}`
	before := w.balance(t)

	// Unpaid: each premium tool's requirements.
	required := map[string]*x402.PaymentRequired{}
	for _, tc := range []struct{ tool, args string }{
		{mcp.ToolGetFullHistory, hist},
		{mcp.ToolGetForensicReport, hist},
		{mcp.ToolBulkVerify, `{"ids":["` + f.jsonPDA + `"]}`},
	} {
		_, _, r := p.call(t, tc.tool, tc.args, "")
		required[tc.tool] = paymentError(t, "unpaid "+tc.tool, r, "Payment required")
		if r.Result.Meta[mcp.MetaPaymentResponse] != nil {
			t.Errorf("unpaid %s: a settlement: %s", tc.tool, r.Result.Meta[mcp.MetaPaymentResponse])
		}
	}
	q := required[mcp.ToolGetFullHistory].Accepts[0]
	buildFor := func(res x402.ResourceInfo, q x402.Requirements, payer solana.PrivateKey) string {
		wire, err := x402.BuildExact(q, x402.Payment{Payer: payer, Blockhash: w.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		b, err := json.Marshal(x402.NewPaymentPayload(res, q, wire))
		testenv.Must(t, err, "payment JSON")
		return string(b)
	}
	build := func(q x402.Requirements, payer solana.PrivateKey) string {
		return buildFor(required[mcp.ToolGetFullHistory].Resource, q, payer)
	}
	unknownRes := required[mcp.ToolGetFullHistory].Resource
	unknownRes.URL = strings.Replace(unknownRes.URL, f.agent, unknownPDA, 1)
	genuine := build(q, w.Payer)
	cheaper := q
	cheaper.Amount = "1"
	broke := w.chain.NewKeypair() // no USDC
	accepted := mustJSON(t, q)

	cases := []struct {
		name, tool, args, meta string
		// want: in the payment error's message; plain: an answer or a
		// tool error that is not a payment error; sdk: the MCP SDK
		// refuses the request itself (HTTP 400, or a JSON-RPC error).
		want  []string
		plain bool
		sdk   bool
	}{
		{name: "string", meta: `"abc"`, want: []string{"invalid_payload", "want a PaymentPayload object", "nothing was charged"}},
		{name: "number", meta: `12`, want: []string{"PaymentPayload object"}},
		{name: "null", meta: `null`, want: []string{"PaymentPayload object"}},
		{name: "boolean", meta: `true`, want: []string{"PaymentPayload object"}},
		{name: "array", meta: `[1,2,3]`, want: []string{"PaymentPayload object"}},
		{name: "empty object", meta: `{}`, want: []string{"invalid_payload", "nothing was charged"}},
		{name: "v1", meta: `{"x402Version":1,"accepted":{},"payload":{"transaction":"AA=="}}`, want: []string{"invalid_x402_version"}},
		{name: "version as a string", meta: `{"x402Version":"2","accepted":` + accepted + `,"payload":{"transaction":"AA=="}}`, want: []string{"invalid_payload"}},
		{name: "duplicate keys", meta: `{"x402Version":2,"x402Version":1,"accepted":` + accepted + `,"payload":{"transaction":"AA=="}}`, want: []string{"invalid_payload"}},
		{name: "oversized", meta: `{"x402Version":2,"pad":"` + strings.Repeat("A", 200_000) + `"}`, want: []string{"at most", "nothing was charged"}},
		{name: "NUL bytes", meta: `{"x402Version":2,"accepted":` + accepted + `,"payload":{"transaction":"\u0000\u0000AA"}}`, want: []string{"invalid_payload"}},
		{name: "unicode transaction", meta: `{"x402Version":2,"accepted":` + accepted + `,"payload":{"transaction":"ñ𝄞ü=="}}`, want: []string{"invalid_payload"}},
		{name: "not base64", meta: `{"x402Version":2,"accepted":` + accepted + `,"payload":{"transaction":"!!!"}}`, want: []string{"not standard base64"}},
		{name: "not a transaction", meta: `{"x402Version":2,"accepted":` + accepted + `,"payload":{"transaction":"AAAA"}}`, want: []string{"invalid"}},
		{name: "deep nesting", meta: strings.Repeat(`{"a":`, 3000) + `1` + strings.Repeat(`}`, 3000), sdk: true},
		{name: "amount lowered", meta: build(cheaper, w.Payer), want: []string{"payment"}},
		{name: "payer without USDC", meta: build(q, broke), want: []string{"simulation"}},
		{name: "on another tool", tool: mcp.ToolBulkVerify, args: `{"ids":["` + f.jsonPDA + `"]}`, meta: genuine, want: []string{"invalid_payment_resource"}},
		{name: "on an unknown agent", args: `{"agentPda":"` + unknownPDA + `"}`, meta: genuine, want: []string{"invalid_payment_resource"}},
		{name: "for an unknown agent", args: `{"agentPda":"` + unknownPDA + `"}`, meta: buildFor(unknownRes, q, w.Payer), plain: true},
		{name: "to a tool that is not premium", tool: mcp.ToolGetAgent, args: hist, meta: genuine, plain: true},
	}
	for _, c := range cases {
		if c.tool == "" {
			c.tool = mcp.ToolGetFullHistory
		}
		if c.args == "" {
			c.args = hist
		}
		status, body, r := p.call(t, c.tool, c.args, c.meta)
		switch {
		case c.sdk:
			if status != http.StatusBadRequest && (status != http.StatusOK || r.Error == nil) {
				t.Errorf("%s: HTTP %d %.300s", c.name, status, body)
			}
		case status != http.StatusOK:
			t.Errorf("%s: HTTP %d %.300s", c.name, status, body)
		case c.plain:
			if r.Error != nil || r.Result == nil || strings.Contains(body, mcp.ErrorKey) {
				t.Errorf("%s: %.300s", c.name, body)
			}
		default:
			paymentError(t, c.name, r, c.want...)
		}
		if strings.Contains(body, mcp.MetaPaymentResponse) || strings.Contains(body, `"pagination"`) {
			t.Errorf("%s: an answer or a settlement: %.300s", c.name, body)
		}
	}
	if status, _ := p.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_full_history","arguments":`+hist+
		`,"_meta":{"x402/payment":{"pad":"`+strings.Repeat("A", 2<<20)+`"}}}}`); status != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB request: HTTP %d", status)
	}
	if got := w.balance(t); got != before {
		t.Fatalf("hostile payments moved money: %d -> %d", before, got)
	}

	// The genuine payment, presented by 8 callers at once: one charge;
	// each caller gets the answer with the settlement, or a payment error
	// (the payment is in flight), never a protocol error.
	const callers = 8
	var wg sync.WaitGroup
	results := make([]*rpcResult, callers)
	bodies := make([]string, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, bodies[i], results[i] = p.call(t, mcp.ToolGetFullHistory, hist, genuine)
		}()
	}
	wg.Wait()
	var tx string
	answered := 0
	for i, r := range results {
		if r.Result == nil || r.Error != nil {
			t.Fatalf("caller %d: %.300s", i, bodies[i])
		}
		if r.Result.IsError {
			paymentError(t, "caller at once", r)
			continue
		}
		answered++
		var s x402.SettleResponse
		testenv.Must(t, json.Unmarshal(r.Result.Meta[mcp.MetaPaymentResponse], &s), "caller %d: settlement", i)
		if !s.Success || tx != "" && s.Transaction != tx || len(r.Result.StructuredContent) == 0 {
			t.Fatalf("caller %d: settlement %+v (another: %s)", i, s, tx)
		}
		tx = s.Transaction
	}
	if answered == 0 {
		t.Fatal("no caller got the answer it paid for")
	}
	if got := w.balance(t); got != before+historyPrice {
		t.Fatalf("payTo %d -> %d, want one charge of %d", before, got, historyPrice)
	}
	if rows := settled(t, node.Store); len(rows) != 1 || rows[0].TxSignature != tx {
		t.Fatalf("ledger %+v", rows)
	}
	t.Logf("hostile MCP payments: %d unpaid, %d refused, 1 oversized request, %d callers of one payment (%d answered), one charge",
		len(required), len(cases), callers, answered)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	testenv.Must(t, err, "JSON")
	return string(b)
}
