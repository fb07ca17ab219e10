package x402fiber_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/mcp"
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
	c, err := client.New(n.Root, client.WithPayer(client.Payer{Key: f.payer, MaxAmount: 30_000}))
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
	srv, err := mcp.New(mcp.Config{APIURL: n.Root, Payer: f.payer, SpendCap: 35_000, MaxPrice: 100_000, Timeout: 20 * time.Second})
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
