package verifier

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
)

// catalogConfig is a mainnet configuration with the default prices, the
// bulk route unpriced.
func catalogConfig(t *testing.T) Config {
	t.Helper()
	c, err := ConfigFromEnv(func(k string) string {
		switch k {
		case "ATTESTD_X402_PAY_TO":
			return solana.NewWallet().PublicKey().String()
		case "ATTESTD_X402_FACILITATOR_URL":
			return "https://facilitator.test"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(c.Prices, "/premium/bulk-verify")
	return c
}

var testTools = MCPEndpoint{Path: "/mcp", Revisions: []string{"2026-07-28", "2025-03-26"},
	Tools: []string{"get_stats", "get_full_history", "get_forensic_report", "bulk_verify", "list_datasets"},
	Paid: []MCPTool{
		{Name: "get_full_history", Description: "History.", InputSchema: json.RawMessage(`{"type":"object"}`), Route: "/premium/full-history/:agentId"},
		{Name: "get_forensic_report", InputSchema: json.RawMessage(`{"type":"object","required":["agentPda"]}`),
			Example: json.RawMessage(`{"agentPda":"x"}`), Route: "/premium/forensic-report/:agentId"},
		{Name: "bulk_verify", InputSchema: json.RawMessage(`{"type":"object"}`), Route: "/premium/bulk-verify"}, // not priced here
		{Name: "other", InputSchema: json.RawMessage(`{"type":"object"}`), Route: "/premium/nothing"},           // no such route
	}}

// A tool's bazaar is the official builder's shape: the schema lists
// description and example only when info has them, and requires type,
// toolName and inputSchema.
func TestMCPToolBazaar(t *testing.T) {
	for _, tc := range []struct {
		tool  MCPTool
		props []string
	}{
		{testTools.Paid[0], []string{"type", "toolName", "description", "transport", "inputSchema"}},
		{testTools.Paid[1], []string{"type", "toolName", "transport", "inputSchema", "example"}},
	} {
		b, err := tc.tool.Bazaar("/api/v1/premium/x/:agentId")
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Schema     string `json:"$schema"`
			Properties struct {
				Input struct {
					Properties           map[string]json.RawMessage
					Required             []string
					AdditionalProperties *bool
				}
			}
			Required []string
		}
		if err := json.Unmarshal(b.Schema, &schema); err != nil {
			t.Fatal(err)
		}
		in := schema.Properties.Input
		var props []string
		for k := range in.Properties {
			props = append(props, k)
		}
		if schema.Schema != "https://json-schema.org/draft/2020-12/schema" || len(props) != len(tc.props) ||
			!reflect.DeepEqual(in.Required, []string{"type", "toolName", "inputSchema"}) || in.AdditionalProperties == nil ||
			*in.AdditionalProperties || !reflect.DeepEqual(schema.Required, []string{"input"}) {
			t.Errorf("%s: schema %s", tc.tool.Name, b.Schema)
		}
		for _, p := range tc.props {
			if in.Properties[p] == nil {
				t.Errorf("%s: the schema lacks %s: %s", tc.tool.Name, p, b.Schema)
			}
		}
		i := b.Info.Input
		if i.Type != "mcp" || i.ToolName != tc.tool.Name || i.Transport != "streamable-http" || string(i.InputSchema) != string(tc.tool.InputSchema) ||
			string(i.Example) != string(tc.tool.Example) || b.RouteTemplate != "/api/v1/premium/x/:agentId" {
			t.Errorf("%s: info %+v", tc.tool.Name, b)
		}
	}
	for _, bad := range []MCPTool{{Name: "", InputSchema: json.RawMessage(`{}`)}, {Name: "x", InputSchema: json.RawMessage(`[]`)},
		{Name: "x"}, {Name: "x", InputSchema: json.RawMessage(`{}`), Example: json.RawMessage(`"a"`)}} {
		if _, err := bad.Bazaar(""); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// The document lists the priced tools of the endpoint after the routes,
// at the endpoint's URL, each priced as its route; resources keeps the
// routes alone; OfType picks either kind.
func TestDiscoveryDocumentMCP(t *testing.T) {
	c := catalogConfig(t)
	origin, _ := config.ParseOrigin("https://attestd.test")
	updated := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	plain := c.DiscoveryDocument(origin, "Fee111", updated, MCPEndpoint{})
	d := c.DiscoveryDocument(origin, "Fee111", updated, testTools)
	if len(plain.Items) != 2 || len(d.Items) != 4 || !reflect.DeepEqual(d.Resources, plain.Resources) || len(d.Resources) != 2 ||
		!strings.Contains(d.Instructions, "https://attestd.test/mcp") || strings.Contains(plain.Instructions, "/mcp") {
		t.Fatalf("items %d/%d, resources %v, instructions %q", len(plain.Items), len(d.Items), d.Resources, d.Instructions)
	}
	if !reflect.DeepEqual(d.Types(), []string{"http", "mcp"}) || !reflect.DeepEqual(plain.Types(), []string{"http"}) ||
		len(d.OfType("mcp").Items) != 2 || len(d.OfType("http").Items) != 2 || len(d.OfType("").Items) != 4 || len(d.OfType("sse").Items) != 0 {
		t.Fatalf("types %v", d.Types())
	}
	for i, tool := range testTools.Paid[:2] {
		it, route := d.Items[2+i], plain.Items[1-i] // routes sorted by URL: forensic-report, full-history
		var b MCPBazaar
		if err := json.Unmarshal(it.Extensions[x402.ExtensionBazaar], &b); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"toolName": tool.Name, "description": tool.Description, "transport": "streamable-http",
			"mimeType": "application/json", "paidRoute": route.Metadata["routeTemplate"], "priceEnv": route.Metadata["priceEnv"]}
		if it.Resource != "https://attestd.test/mcp" || it.Type != "mcp" || it.LastUpdated != "2026-11-21T10:00:00Z" ||
			!reflect.DeepEqual(it.Accepts, route.Accepts) || !reflect.DeepEqual(it.Metadata, want) || b.Info.Input.ToolName != tool.Name ||
			b.RouteTemplate != "" || it.Accepts[0].Extra == nil || it.Accepts[0].Extra.FeePayer != "Fee111" {
			t.Errorf("%s: %+v (its route %+v)", tool.Name, it, route)
		}
	}
	if p := d.OfType("mcp").Page(1, 1); len(p.Items) != 1 || p.Items[0].Metadata["toolName"] != "get_forensic_report" || p.Pagination.Total != 2 {
		t.Errorf("page of mcp items: %+v", p)
	}
}

// /llms.txt's MCP section: the endpoint, its revisions, every tool, the
// paid ones at their routes' prices, how to pay, the rate limit; without
// an endpoint, the line on `attestd mcp --http` instead.
func TestLLMsTextMCP(t *testing.T) {
	c := catalogConfig(t)
	origin, _ := config.ParseOrigin("https://attestd.test")
	plain := c.LLMsText(origin, true, MCPEndpoint{})
	text := c.LLMsText(origin, true, testTools)
	if strings.Contains(plain, "## MCP") || !strings.Contains(plain, "`attestd mcp --http`") {
		t.Errorf("without an endpoint:\n%s", plain)
	}
	_, section, ok := strings.Cut(text, "\n## MCP\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatalf("no MCP section:\n%s", text)
	}
	for _, w := range []string{"https://attestd.test/mcp", "stateless streamable HTTP", "2026-07-28, 2025-03-26",
		"`get_stats`, `list_datasets` (free); `get_full_history`, `get_forensic_report`, `bulk_verify` (paid)",
		"`get_full_history` 0.01 USDC (as GET /api/v1/premium/full-history/:agentId)",
		"`get_forensic_report` 0.05 USDC (as GET /api/v1/premium/forensic-report/:agentId)",
		"`params._meta[\"x402/payment\"]`", "`result._meta[\"x402/payment-response\"]`", "`Authorization: Bearer KEY`",
		"counts once against the caller's per-IP rate limit"} {
		if !strings.Contains(section, w) {
			t.Errorf("the MCP section lacks %q:\n%s", w, section)
		}
	}
	if strings.Contains(section, "`bulk_verify` 0.") {
		t.Errorf("an unpriced tool has a price:\n%s", section)
	}
}
