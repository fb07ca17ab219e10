package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
)

// agentCall is what testdata/x402agent/agent.mjs records of one tools/call
// made with the official MCP TypeScript SDK.
type agentCall struct {
	// Threw is the SDK's error when it threw instead of returning.
	Threw             *string              `json:"threw"`
	IsError           bool                 `json:"isError"`
	ContentTypes      []string             `json:"contentTypes"`
	StructuredContent json.RawMessage      `json:"structuredContent"`
	Text              string               `json:"text"`
	Settle            *x402.SettleResponse `json:"settle"`
	// Payment is the x402 payment error read from content[0].text (nil:
	// none was found).
	Payment *struct {
		Code    int                   `json:"code"`
		Message string                `json:"message"`
		Data    *x402.PaymentRequired `json:"data"`
		// DataError is why data is not a PaymentRequired to the
		// official x402 schema.
		DataError *string `json:"dataError"`
		// DirectReadable: content[0].text (or structuredContent) read as
		// the PaymentRequired itself gives the same PaymentRequired.
		DirectReadable bool `json:"directReadable"`
	} `json:"payment"`
}

type agentRun struct {
	Tools []struct {
		Name         string `json:"name"`
		OutputSchema bool   `json:"outputSchema"`
	} `json:"tools"`
	Unpaid    map[string]*agentCall `json:"unpaid"`
	Paid      *agentCall            `json:"paid"`
	Again     *agentCall            `json:"again"`
	OtherTool *agentCall            `json:"otherTool"`
	Malformed *agentCall            `json:"malformed"`
}

// runAgent runs testdata/x402agent/agent.mjs (see there) against the MCP
// endpoint, paying from w's payer; paid runs when the agent says it has
// paid (mode "flow"), before it presents the payment again.
func runAgent(t *testing.T, mode, endpoint string, w *wallets, agent, attestation string, paid func()) *agentRun {
	t.Helper()
	modules := testenv.NodeModules(t, filepath.Join("testdata", "x402agent"))
	dir := t.TempDir()
	testenv.Must(t, os.Symlink(modules, filepath.Join(dir, "node_modules")), "link node_modules")
	script, err := os.ReadFile(filepath.Join("testdata", "x402agent", "agent.mjs"))
	testenv.Must(t, err, "read agent.mjs")
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "agent.mjs"), script, 0o644), "copy agent.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "agent.mjs", mode, endpoint, w.chain.RPCURL(), w.keyFile(t), agent, attestation)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	testenv.Must(t, err, "stdin")
	stdout, err := cmd.StdoutPipe()
	testenv.Must(t, err, "stdout")
	testenv.Must(t, cmd.Start(), "start agent.mjs")
	var last []byte
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var step struct{ Step string }
		if json.Unmarshal(sc.Bytes(), &step) == nil && step.Step == "paid" {
			if paid != nil {
				paid()
			}
			_, _ = stdin.Write([]byte("go\n"))
			continue
		}
		last = append(last[:0], sc.Bytes()...)
	}
	_ = stdin.Close()
	testenv.Must(t, cmd.Wait(), "agent.mjs %s: %s", mode, stderr.String())
	var r agentRun
	testenv.Must(t, json.Unmarshal(last, &r), "decode %s", last)
	return &r
}

// checkPaymentError checks that c is the x402 MCP transport's payment
// error as the official SDK returns it after listTools: a tool error (not
// an exception), without structuredContent (the tool's outputSchema
// describes its answer), whose content[0].text holds the
// {"x402/error": {code: 402, message, data: PaymentRequired}} wrapper,
// data valid to the official x402 schema and the same PaymentRequired
// readable from the text directly. want are in the message.
func checkPaymentError(t *testing.T, what string, c *agentCall, want ...string) *x402.PaymentRequired {
	t.Helper()
	if c == nil {
		t.Fatalf("%s: not called", what)
	}
	if c.Threw != nil {
		t.Fatalf("%s: the MCP SDK threw: %s", what, *c.Threw)
	}
	// One text content, no structuredContent: nothing of the answer.
	if !c.IsError || len(c.StructuredContent) != 0 && string(c.StructuredContent) != "null" || !reflect.DeepEqual(c.ContentTypes, []string{"text"}) {
		t.Fatalf("%s: isError %v, structuredContent %s, content %v", what, c.IsError, c.StructuredContent, c.ContentTypes)
	}
	p := c.Payment
	if p == nil {
		t.Fatalf("%s: no x402/error wrapper in content[0].text: %.400s", what, c.Text)
	}
	if p.Code != mcp.ErrorCode || p.Data == nil || p.DataError != nil || !p.DirectReadable {
		t.Fatalf("%s: wrapper code %d, data %+v (%v), direct %v: %.400s", what, p.Code, p.Data, p.DataError, p.DirectReadable, c.Text)
	}
	for _, w := range want {
		if !strings.Contains(p.Message, w) || !strings.Contains(p.Data.Error, w) {
			t.Errorf("%s: message %q / error %q lacks %q", what, p.Message, p.Data.Error, w)
		}
	}
	return p.Data
}

// TestOfficialAgentPaysOverMCP is issue 32's agent: the official MCP
// TypeScript SDK, after listTools, calls each premium tool of a real
// `attestd mcp --http` unpaid and reads the payment requirements; pays
// get_forensic_report with the official x402 client (USDC on the chain
// simulator, settled by a real API node) in _meta["x402/payment"], gets
// the report and the settlement in _meta["x402/payment-response"]; the
// same payment again gets the same answer and no second charge; that
// payment on another tool, and a malformed one, are payment errors the
// SDK reads; a settlement that does not confirm is one too, with the
// report withheld.
func TestOfficialAgentPaysOverMCP(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40)
	w := newWallets(t)
	bin := testenv.BuildAttestd(t)
	// Two endpoints: `attestd mcp --http` in front of a paying node, and
	// the paying node's own /mcp.
	endpoints := []struct {
		name  string
		start func(t *testing.T, settle time.Duration) (*apptest.Node, string)
	}{
		{"attestd mcp --http", func(t *testing.T, settle time.Duration) (*apptest.Node, string) {
			node := f.payingNode(t, w.config(settle))
			return node, serveHTTP(t, bin, childEnv(node.Root, ""))
		}},
		{"the node's /mcp", func(t *testing.T, settle time.Duration) (*apptest.Node, string) {
			var endpoint string
			node := f.payingNodeWith(t, w.config(settle), func(api *app.API, origin config.Origin) {
				mountRemote(t, api, origin, nil)
				endpoint = origin.URL(mcp.Path)
			})
			return node, endpoint
		}},
	}
	for _, e := range endpoints {
		t.Run(e.name, func(t *testing.T) {
			node, endpoint := e.start(t, 10*time.Second)
			agentPays(t, f, w, node, endpoint)
			t.Run("settlement not confirmed", func(t *testing.T) {
				node, endpoint := e.start(t, time.Second)
				agentSettlementFails(t, f, w, node, endpoint)
			})
		})
	}
}

// agentPays runs the official agent's whole flow against endpoint, in
// front of node.
func agentPays(t *testing.T, f *fixture, w *wallets, node *apptest.Node, endpoint string) {
	t.Helper()
	before, ledger := w.balance(t), len(settled(t, node.Store))
	// Between the paid call and the same payment again, the agent gets a
	// new attestation: a report generated afresh would count it.
	r := runAgent(t, "flow", endpoint, w, f.agent, f.jsonPDA, func() { f.addAttestation(t, node) })

	if len(r.Tools) != len(mcp.ToolNames()) {
		t.Fatalf("listTools: %+v", r.Tools)
	}
	for _, tool := range r.Tools {
		if !tool.OutputSchema {
			t.Errorf("%s lists no outputSchema: the SDK would not check structuredContent", tool.Name)
		}
	}
	prices := map[string]uint64{mcp.ToolGetForensicReport: reportPrice, mcp.ToolGetFullHistory: historyPrice, mcp.ToolBulkVerify: bulkPrice}
	routes := map[string]string{mcp.ToolGetForensicReport: "/api/v1/premium/forensic-report/" + f.agent,
		mcp.ToolGetFullHistory: "/api/v1/premium/full-history/" + f.agent, mcp.ToolBulkVerify: "/api/v1/premium/bulk-verify"}
	for _, tool := range mcp.PremiumTools {
		pr := checkPaymentError(t, "unpaid "+tool, r.Unpaid[tool], "Payment required")
		q := pr.Accepts[0]
		if pr.X402Version != 2 || len(pr.Accepts) != 1 || q.Amount != itoa(prices[tool]) || q.PayTo != w.PayTo.String() ||
			q.Network != x402.Devnet.CAIP2 || q.Asset != x402.Devnet.USDC.String() || pr.Resource.URL != node.Root+routes[tool] ||
			q.Extra == nil || q.Extra.FeePayer != w.FeePayer.PublicKey().String() {
			t.Errorf("unpaid %s: requirements %+v %+v", tool, pr, q)
		}
	}

	paid := r.Paid
	if paid == nil || paid.Threw != nil || paid.IsError || paid.Settle == nil {
		t.Fatalf("paid call: %+v (text %.400s)", paid, paid.Text)
	}
	var report mcp.ForensicOutput
	testenv.Must(t, json.Unmarshal(paid.StructuredContent, &report), "report")
	if !report.ReportHashVerified || report.Report.Agent.PDA != f.agent || report.Report.Summary.Totals.Attestations == 0 {
		t.Fatalf("paid report: verified %v, agent %s, totals %+v", report.ReportHashVerified, report.Report.Agent.PDA, report.Report.Summary.Totals)
	}
	s := paid.Settle
	if !s.Success || s.Transaction == "" || s.Payer != w.Payer.PublicKey().String() || s.Amount != itoa(reportPrice) || s.Network != x402.Devnet.CAIP2 {
		t.Fatalf("settlement: %+v", s)
	}

	// The same payment again: the same answer, the same settlement.
	again := r.Again
	if again == nil || again.Threw != nil || again.IsError || again.Settle == nil || again.Settle.Transaction != s.Transaction {
		t.Fatalf("the same payment again: %+v", again)
	}
	if !reflect.DeepEqual(canonical(t, again.StructuredContent), canonical(t, paid.StructuredContent)) || again.Text != paid.Text {
		var a mcp.ForensicOutput
		_ = json.Unmarshal(again.StructuredContent, &a)
		t.Errorf("the same payment again got another answer: report %s of %d attestations, generated %v; it bought %s of %d, generated %v",
			a.Report.ReportHash, a.Report.Summary.Totals.Attestations, a.Report.GeneratedAt, report.Report.ReportHash,
			report.Report.Summary.Totals.Attestations, report.Report.GeneratedAt)
	}

	// That payment on another tool: refused, with bulk_verify's requirements.
	pr := checkPaymentError(t, "the payment on another tool", r.OtherTool)
	if pr.Accepts[0].Amount != itoa(bulkPrice) || r.OtherTool.Settle != nil {
		t.Errorf("the payment on another tool: %+v, settle %+v", pr, r.OtherTool.Settle)
	}
	checkPaymentError(t, "a malformed payment", r.Malformed, "nothing was charged", mcp.MetaPayment)

	if got := w.balance(t); got != before+reportPrice {
		t.Fatalf("payTo %d -> %d, want one charge of %d", before, got, reportPrice)
	}
	// The fixture's nodes share one ledger: one more settled row, this one.
	if rows := settled(t, node.Store); len(rows) != ledger+1 || !slices.ContainsFunc(rows, func(p store.Payment) bool { return p.TxSignature == s.Transaction }) {
		t.Fatalf("ledger: %+v", rows)
	}

}

// agentSettlementFails: a payment whose settlement does not confirm is
// the transport's payment error, with the failed settlement, and no
// charge.
func agentSettlementFails(t *testing.T, f *fixture, w *wallets, node *apptest.Node, endpoint string) {
	t.Helper()
	before := w.balance(t)
	w.chain.HoldNextTransactions(1)
	t.Cleanup(w.chain.DropHeld)
	r := runAgent(t, "settle", endpoint, w, f.agent, f.jsonPDA, nil)
	checkPaymentError(t, "unpaid", r.Unpaid[mcp.ToolGetForensicReport], "Payment required")
	checkPaymentError(t, "paid, not confirmed", r.Paid, "settlement_not_confirmed")
	if sr := r.Paid.Settle; sr == nil || sr.Success {
		t.Errorf("the failed settlement is not in _meta[%q]: %+v", mcp.MetaPaymentResponse, sr)
	}
	if got := w.balance(t); got != before {
		t.Fatalf("payTo %d -> %d for an unsettled payment", before, got)
	}
}

// addAttestation indexes one more attestation of the fixture's agent and
// waits until node serves it.
func (f *fixture) addAttestation(t *testing.T, node *apptest.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api, err := client.New(node.URL)
	testenv.Must(t, err, "client")
	st, err := api.GetAgentStats(ctx, f.agent)
	testenv.Must(t, err, "agent stats")
	var agent seed.Agent
	for _, a := range f.env.Seeded.Agents {
		if a.PDA.String() == f.agent {
			agent = a
		}
	}
	stats, err := f.env.Store.Stats(ctx, time.Now())
	testenv.Must(t, err, "stats")
	// Another attestation each time (the seed and slot name it).
	n := f.added.Add(1)
	_, err = f.env.Store.Apply(ctx, &store.Batch{Attestations: seed.NewAttestations([]seed.Agent{agent}, 1, time.Now(), stats.IndexedSlot+5000*uint64(n), 4242+uint64(n))})
	testenv.Must(t, err, "apply an attestation")
	testenv.WaitForState(t, "the node counts the new attestation", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		now, err := api.GetAgentStats(ctx, f.agent)
		testenv.Must(t, err, "agent stats")
		return now.TotalAttestations == st.TotalAttestations+1,
			fmt.Sprintf("the node counts %d attestations, want %d", now.TotalAttestations, st.TotalAttestations+1)
	}))
}

// canonical decodes JSON for comparison (nil for none).
func canonical(t *testing.T, b json.RawMessage) any {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	var v any
	testenv.Must(t, json.Unmarshal(b, &v), "decode %s", b)
	return v
}

func itoa(n uint64) string { return x402.FormatAmount(n, 0) }
