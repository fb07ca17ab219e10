package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Revisions are the MCP revisions a node's endpoint speaks (docs/mcp.md),
// newest first: 2026-07-28 (server/discover, per-request _meta) and the
// initialize handshake of the three before it.
var Revisions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}

// PaidTool is one paid tool of a node's endpoint, for discovery: its name,
// description and inputSchema as tools/list gives them, an example call's
// arguments, and the REST route it calls and pays for.
type PaidTool = verifier.MCPTool

// paidRoutes are the REST routes the premium tools call (client's
// FullHistory, ForensicReport and BulkVerify), as verifier.Routes name
// them: each tool costs what its route costs, and its payment is bound to
// the route's URL.
var paidRoutes = map[string]string{
	ToolGetFullHistory:    "/premium/full-history/:agentId",
	ToolGetForensicReport: "/premium/forensic-report/:agentId",
	ToolBulkVerify:        "/premium/bulk-verify",
}

// paidExamples are the arguments of an example call of each premium tool
// (the REST routes' examples, as the tools name them).
var paidExamples = map[string]string{
	ToolGetFullHistory:    `{"agentPda":"` + verifier.ExampleAgent + `","limit":100}`,
	ToolGetForensicReport: `{"agentPda":"` + verifier.ExampleAgent + `","from":"2026-11-01"}`,
	ToolBulkVerify:        `{"ids":["` + verifier.ExampleAgent + `"]}`,
}

// The tools a node's endpoint lists, listed once (see remoteTools).
var (
	remoteOnce  sync.Once
	remoteList  []PaidTool
	remoteError error
)

// remoteTools are the tools a node's endpoint lists.
func remoteTools() ([]PaidTool, error) {
	remoteOnce.Do(func() { remoteList, remoteError = listRemoteTools() })
	return remoteList, remoteError
}

// PaidTools are the premium tools as a node's endpoint lists them
// (tools/list of the same tool server, built as NewRemote builds it), in
// PremiumTools order, each with the route it pays for.
func PaidTools() ([]PaidTool, error) {
	tools, err := remoteTools()
	if err != nil {
		return nil, err
	}
	out := make([]PaidTool, 0, len(PremiumTools))
	for _, name := range PremiumTools {
		i := slices.IndexFunc(tools, func(t PaidTool) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("mcp: the premium tool %s is not listed", name)
		}
		out = append(out, tools[i])
	}
	return out, nil
}

// Endpoint describes a node's endpoint for the discovery documents
// (/.well-known/x402, /llms.txt): its path, revisions, tools and paid
// tools.
func Endpoint() (verifier.MCPEndpoint, error) {
	paid, err := PaidTools()
	if err != nil {
		return verifier.MCPEndpoint{}, err
	}
	return verifier.MCPEndpoint{Path: Path, Revisions: slices.Clone(Revisions), Tools: ToolNames(), Paid: paid}, nil
}

// listRemoteTools lists the tools of a remote-endpoint server over an
// in-memory session: what tools/list answers on /mcp.
func listRemoteTools() ([]PaidTool, error) {
	s, err := New(Config{APIURL: "http://127.0.0.1", remote: true})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: list the tools: %w", err)
	}
	defer ss.Close()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "attestd-discovery", Version: buildinfo.Version}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: list the tools: %w", err)
	}
	defer cs.Close()
	var out []PaidTool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list the tools: %w", err)
		}
		in, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp: inputSchema of %s: %w", t.Name, err)
		}
		p := PaidTool{Name: t.Name, Description: t.Description, InputSchema: in, Route: paidRoutes[t.Name]}
		if ex, ok := paidExamples[t.Name]; ok {
			p.Example = json.RawMessage(ex)
		}
		out = append(out, p)
	}
	return out, nil
}

// toolBazaar replaces the bazaar extension of pr, a premium tool's payment
// requirements as its REST route answered them (info.input of type http:
// how to call the route), with the tool's own (type mcp: how to call the
// tool), as /.well-known/x402 lists it; routeTemplate is kept (the catalog
// key of a route with path parameters). Everything else, the resource URL
// the payment is bound to first, is left as the route said. Without a
// bazaar in pr, nothing is added.
func toolBazaar(pr *x402.PaymentRequired, tool string) error {
	raw, ok := pr.Extensions[x402.ExtensionBazaar]
	if !ok {
		return nil
	}
	var route struct {
		RouteTemplate string `json:"routeTemplate"`
	}
	if err := json.Unmarshal(raw, &route); err != nil {
		return fmt.Errorf("the route's bazaar extension: %w", err)
	}
	tools, err := PaidTools()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(tools, func(t PaidTool) bool { return t.Name == tool })
	if i < 0 {
		return fmt.Errorf("%s is not a paid tool", tool)
	}
	b, err := tools[i].Bazaar(route.RouteTemplate)
	if err != nil {
		return err
	}
	bz, err := json.Marshal(b)
	if err != nil {
		return err
	}
	pr.Extensions[x402.ExtensionBazaar] = bz
	return nil
}
