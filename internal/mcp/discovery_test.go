package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mountDiscovery serves the discovery documents on api at origin as
// `attestd serve` does, with the node's MCP endpoint described (a verifier
// of its own over cfg: discovery reads only its configuration).
func mountDiscovery(t *testing.T, f *fixture, api *app.API, cfg verifier.Config, origin config.Origin) {
	t.Helper()
	v, err := verifier.New(context.Background(), verifier.Deps{Config: cfg, Ledger: f.env.Store, Logger: apptest.Logger()})
	testenv.Must(t, err, "verifier")
	t.Cleanup(v.Close)
	ep, err := mcp.Endpoint()
	testenv.Must(t, err, "endpoint")
	d, err := x402fiber.NewDiscovery(v, origin, x402fiber.WithMCP(ep))
	testenv.Must(t, err, "discovery")
	d.Routes(api)
}

// bazaarCase is one bazaar extension for the official validator.
type bazaarCase struct {
	Name        string          `json:"name"`
	ResourceURL string          `json:"resourceUrl"`
	Bazaar      json.RawMessage `json:"bazaar"`
	tool        string
	catalogURL  string // what a facilitator must key it by
}

// TestPaidToolsDiscovered: a paying node with its MCP endpoint lists each
// paid tool in /.well-known/x402 (type mcp, at the endpoint's URL, priced
// as the route it calls, with the tool's bazaar: its name and inputSchema
// as tools/list gives them); an unpaid call of the tool answers that
// route's payment requirements (the route's URL, its accepts) with the
// tool's bazaar in place of the route's; `attestd mcp --http` keeps the
// route's. Every tool bazaar passes the rules by hand, a JSON Schema
// 2020-12 validator and the official @x402/extensions validator.
func TestPaidToolsDiscovered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10)
	w := newWallets(t)
	cfg := w.config(10 * time.Second)
	var endpoint string
	var origin config.Origin
	node := f.payingNodeWith(t, cfg, func(api *app.API, o config.Origin) {
		mountRemote(t, api, o, nil)
		mountDiscovery(t, f, api, cfg, o)
		endpoint, origin = o.URL(mcp.Path), o
	})
	paid, err := mcp.PaidTools()
	testenv.Must(t, err, "paid tools")
	listedToolsAre(t, endpoint, paid)

	doc := wellKnown(t, node, "")
	if len(doc.Items) != len(verifier.Routes)+len(mcp.PremiumTools) || len(doc.Resources) != len(verifier.Routes) ||
		!strings.Contains(doc.Instructions, endpoint) || !strings.Contains(doc.Instructions, `_meta["x402/payment"]`) {
		t.Fatalf("/.well-known/x402: %d items, resources %v, instructions %q", len(doc.Items), doc.Resources, doc.Instructions)
	}
	for typ, n := range map[string]int{"mcp": len(mcp.PremiumTools), "http": len(verifier.Routes)} {
		if page := wellKnown(t, node, "?type="+typ); len(page.Items) != n || page.Pagination.Total != n || page.OfType(typ).Types()[0] != typ {
			t.Errorf("?type=%s: %d items, pagination %+v", typ, len(page.Items), page.Pagination)
		}
	}
	var cases []bazaarCase
	for _, tool := range paid {
		item := toolItem(t, doc, origin, endpoint, tool)
		cases = append(cases, bazaarCase{Name: tool.Name + " in /.well-known/x402", ResourceURL: item.Resource,
			Bazaar: item.Extensions[x402.ExtensionBazaar], tool: tool.Name, catalogURL: endpoint})
		pr, restTemplate := toolPaymentError(t, f, node, endpoint, tool)
		catalog := pr.Resource.URL
		if restTemplate != "" {
			catalog = origin.String() + restTemplate
		}
		cases = append(cases, bazaarCase{Name: tool.Name + "'s payment error", ResourceURL: pr.Resource.URL,
			Bazaar: pr.Extensions[x402.ExtensionBazaar], tool: tool.Name, catalogURL: catalog})
		// The item and the payment error describe the tool alike.
		var listed, answered verifier.MCPBazaar
		testenv.Must(t, json.Unmarshal(item.Extensions[x402.ExtensionBazaar], &listed), "listed bazaar")
		testenv.Must(t, json.Unmarshal(pr.Extensions[x402.ExtensionBazaar], &answered), "answered bazaar")
		if answered.RouteTemplate != restTemplate || listed.RouteTemplate != "" || !reflect.DeepEqual(canonical(t, mustMarshal(t, listed.Info)),
			canonical(t, mustMarshal(t, answered.Info))) || !bytes.Equal(listed.Schema, answered.Schema) {
			t.Errorf("%s: listed bazaar %s, payment error's %s", tool.Name, mustMarshal(t, listed), mustMarshal(t, answered))
		}
	}
	for _, c := range cases {
		checkToolBazaar(t, c, paid)
	}
	officialValidator(t, cases)
	localServerKeepsRouteBazaar(t, node)
}

// listedToolsAre checks that mcp.PaidTools are the premium tools as the
// endpoint lists them to the official Go SDK client: name, description,
// inputSchema; each names a payable route.
func listedToolsAre(t *testing.T, endpoint string, paid []mcp.PaidTool) {
	t.Helper()
	cs := connectRemote(t, endpoint, callerClient("127.0.0.1", nil))
	res, err := cs.ListTools(context.Background(), nil)
	testenv.Must(t, err, "tools/list")
	if len(paid) != len(mcp.PremiumTools) {
		t.Fatalf("PaidTools %d, PremiumTools %v", len(paid), mcp.PremiumTools)
	}
	for i, p := range paid {
		j := slices.IndexFunc(res.Tools, func(l *mcpsdk.Tool) bool { return l.Name == p.Name })
		if p.Name != mcp.PremiumTools[i] || j < 0 {
			t.Fatalf("paid tool %d: %s, not listed or not %s", i, p.Name, mcp.PremiumTools[i])
		}
		l := res.Tools[j]
		if l.Description != p.Description || !reflect.DeepEqual(canonical(t, mustMarshal(t, l.InputSchema)), canonical(t, p.InputSchema)) {
			t.Errorf("%s: PaidTools says %q %s, tools/list %q %s", p.Name, p.Description, p.InputSchema, l.Description, mustMarshal(t, l.InputSchema))
		}
		if _, ok := verifier.RouteOf(p.Route); !ok {
			t.Errorf("%s pays for %q, which is no payable route", p.Name, p.Route)
		}
	}
	for _, v := range mcp.Revisions {
		if !slices.Contains(mcpsdk.SupportedProtocolVersions(), v) {
			t.Errorf("revision %s is not one the SDK speaks", v)
		}
	}
}

func wellKnown(t *testing.T, node *apptest.Node, query string) verifier.Discovery {
	t.Helper()
	r := node.GetRoot(t, "/.well-known/x402"+query)
	if r.Status != http.StatusOK {
		t.Fatalf("/.well-known/x402%s: %d %s", query, r.Status, r.Body)
	}
	var d verifier.Discovery
	testenv.Must(t, json.Unmarshal(r.Body, &d), "decode /.well-known/x402")
	return d
}

// toolItem finds tool's item in doc and checks it against its route's.
func toolItem(t *testing.T, doc verifier.Discovery, origin config.Origin, endpoint string, tool mcp.PaidTool) x402.DiscoveredResource {
	t.Helper()
	route, _ := verifier.RouteOf(tool.Route)
	var item, rest *x402.DiscoveredResource
	for i, it := range doc.Items {
		switch {
		case it.Type == verifier.TypeMCP && it.Metadata["toolName"] == tool.Name:
			item = &doc.Items[i]
		case it.Type == "http" && it.Resource == origin.URL(route.APIPath()):
			rest = &doc.Items[i]
		}
	}
	if item == nil || rest == nil {
		t.Fatalf("%s: item %v, its route's %v", tool.Name, item, rest)
	}
	want := map[string]any{"toolName": tool.Name, "description": tool.Description, "transport": "streamable-http",
		"mimeType": "application/json", "paidRoute": route.APIPath(), "priceEnv": route.Env}
	if item.Resource != endpoint || item.X402Version != 2 || !reflect.DeepEqual(item.Accepts, rest.Accepts) ||
		!reflect.DeepEqual(item.Metadata, want) || item.LastUpdated != rest.LastUpdated || len(item.Extensions) != 1 {
		t.Errorf("%s: item %+v; its route's accepts %+v", tool.Name, item, rest.Accepts)
	}
	return *item
}

// toolPaymentError calls tool unpaid on the endpoint and its route unpaid
// on the API: the same requirements (resource, accepts, extensions) but
// the bazaar, the tool's in the tool's answer. It returns the tool's
// requirements and the route's routeTemplate.
func toolPaymentError(t *testing.T, f *fixture, node *apptest.Node, endpoint string, tool mcp.PaidTool) (*x402.PaymentRequired, string) {
	t.Helper()
	args := `{"agentPda":"` + f.agent + `"}`
	method, path, body := http.MethodGet, strings.Replace(tool.Route, ":agentId", f.agent, 1), []byte(nil)
	if tool.Name == mcp.ToolBulkVerify {
		args, method, body = `{"ids":["`+f.jsonPDA+`"]}`, http.MethodPost, []byte(`{"ids":["`+f.jsonPDA+`"]}`)
	}
	_, _, r := mcpPoster{url: endpoint}.call(t, tool.Name, args, "")
	pr := paymentError(t, "unpaid "+tool.Name, r, "Payment required")
	res := node.Do(t, method, path, body, nil)
	rest, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
	testenv.Must(t, err, "%s %s: %d %s", method, path, res.Status, res.Body)
	var route x402.Bazaar
	testenv.Must(t, json.Unmarshal(rest.Extensions[x402.ExtensionBazaar], &route), "route's bazaar")
	if route.Info.Input.Type != "http" {
		t.Fatalf("%s %s: bazaar %+v", method, path, route.Info.Input)
	}
	if pr.Resource != rest.Resource || !reflect.DeepEqual(pr.Accepts, rest.Accepts) || pr.X402Version != rest.X402Version ||
		len(pr.Extensions) != len(rest.Extensions) || !strings.HasSuffix(pr.Resource.URL, "/api/v1"+path) {
		t.Errorf("%s: the tool asks %+v, its route %+v", tool.Name, pr, rest)
	}
	for k, v := range rest.Extensions {
		if k != x402.ExtensionBazaar && !bytes.Equal(pr.Extensions[k], v) {
			t.Errorf("%s: extension %s %s, the route's %s", tool.Name, k, pr.Extensions[k], v)
		}
	}
	return pr, route.RouteTemplate
}

// localServerKeepsRouteBazaar: over `attestd mcp --http` (not a node's
// endpoint) the payment error carries the route's bazaar, unchanged.
func localServerKeepsRouteBazaar(t *testing.T, node *apptest.Node) {
	t.Helper()
	srv, err := mcp.New(mcp.Config{APIURL: node.Root})
	testenv.Must(t, err, "mcp server")
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	_, _, r := mcpPoster{url: hs.URL + "/mcp"}.call(t, mcp.ToolBulkVerify, `{"ids":["`+unknownPDA+`"]}`, "")
	pr := paymentError(t, "unpaid bulk_verify over attestd mcp --http", r, "Payment required")
	var b x402.Bazaar
	testenv.Must(t, json.Unmarshal(pr.Extensions[x402.ExtensionBazaar], &b), "bazaar")
	if b.Info.Input.Type != "http" || b.Info.Input.Method != http.MethodPost || b.Info.Input.BodyType != "json" {
		t.Errorf("attestd mcp --http: bazaar %+v, want the route's", b.Info.Input)
	}
}

// checkToolBazaar holds a tool's bazaar to the bazaar extension's rules
// for MCP tools (x402 specs/extensions/bazaar.md; @x402/extensions'
// builder): info.input of type mcp with toolName, inputSchema (the tool's,
// as listed) and transport streamable-http, nothing else but description
// and example; schema a JSON Schema 2020-12 of info requiring type,
// toolName and inputSchema and refusing other members, which info
// passes; the example passes the tool's inputSchema.
func checkToolBazaar(t *testing.T, c bazaarCase, paid []mcp.PaidTool) {
	t.Helper()
	tool := paid[slices.IndexFunc(paid, func(p mcp.PaidTool) bool { return p.Name == c.tool })]
	var b struct {
		Info   map[string]json.RawMessage `json:"info"`
		Schema json.RawMessage            `json:"schema"`
	}
	testenv.Must(t, json.Unmarshal(c.Bazaar, &b), "%s", c.Name)
	var top, input map[string]json.RawMessage
	testenv.Must(t, json.Unmarshal(c.Bazaar, &top), "%s", c.Name)
	testenv.Must(t, json.Unmarshal(b.Info["input"], &input), "%s: info.input", c.Name)
	for k := range top {
		if k != "info" && k != "schema" && k != "routeTemplate" {
			t.Errorf("%s: member %q beside info and schema", c.Name, k)
		}
	}
	if len(b.Info) != 1 || string(input["type"]) != `"mcp"` || string(input["toolName"]) != `"`+c.tool+`"` ||
		string(input["transport"]) != `"streamable-http"` || input["inputSchema"] == nil || input["tool"] != nil ||
		!reflect.DeepEqual(canonical(t, input["inputSchema"]), canonical(t, tool.InputSchema)) {
		t.Errorf("%s: info %s", c.Name, mustMarshal(t, b.Info))
	}
	for k := range input {
		if !slices.Contains([]string{"type", "toolName", "inputSchema", "transport", "description", "example"}, k) {
			t.Errorf("%s: info.input.%s is not a member of an MCP input", c.Name, k)
		}
	}
	schema := compileJSON(t, c.Name+" schema", b.Schema)
	info := decodeJSON(t, mustMarshal(t, b.Info))
	if err := schema.Validate(info); err != nil {
		t.Errorf("%s: info does not pass its schema: %v", c.Name, err)
	}
	// The schema refuses what the rules refuse: the older spec's `tool`
	// for toolName, and a member it does not list.
	for name, mutate := range map[string]func(in map[string]any){
		"tool for toolName": func(in map[string]any) { in["tool"] = in["toolName"]; delete(in, "toolName") },
		"no inputSchema":    func(in map[string]any) { delete(in, "inputSchema") },
		"another member":    func(in map[string]any) { in["method"] = "POST" },
		"type http":         func(in map[string]any) { in["type"] = "http" },
		"transport sse":     func(in map[string]any) { in["transport"] = "sse" },
	} {
		bad := decodeJSON(t, mustMarshal(t, b.Info))
		mutate(bad.(map[string]any)["input"].(map[string]any))
		if schema.Validate(bad) == nil {
			t.Errorf("%s: the schema accepts info with %s", c.Name, name)
		}
	}
	if input["example"] == nil {
		t.Errorf("%s: no example", c.Name)
		return
	}
	if err := compileJSON(t, c.Name+" inputSchema", input["inputSchema"]).Validate(decodeJSON(t, input["example"])); err != nil {
		t.Errorf("%s: the example %s does not pass the tool's inputSchema: %v", c.Name, input["example"], err)
	}
}

// compileJSON compiles a JSON Schema (draft 2020-12 unless it says).
func compileJSON(t *testing.T, what string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	testenv.Must(t, c.AddResource("https://attestd.invalid/schema.json", decodeJSON(t, raw)), "%s", what)
	s, err := c.Compile("https://attestd.invalid/schema.json")
	testenv.Must(t, err, "compile %s", what)
	return s
}

func decodeJSON(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	testenv.Must(t, err, "decode %.200s", raw)
	return v
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	testenv.Must(t, err, "marshal")
	return b
}

// officialValidator runs testdata/bazaar/check.mjs: every case passes
// @x402/extensions' validateDiscoveryExtension and
// validateDiscoveryExtensionSpec, and a facilitator catalogs it under its
// URL and toolName; the older spec's `tool` member is refused (the
// validator is shown to refuse).
func officialValidator(t *testing.T, cases []bazaarCase) {
	t.Helper()
	var legacy map[string]any
	testenv.Must(t, json.Unmarshal(cases[0].Bazaar, &legacy), "decode")
	in := legacy["info"].(map[string]any)["input"].(map[string]any)
	in["tool"] = in["toolName"]
	delete(in, "toolName")
	all := append(slices.Clone(cases), bazaarCase{Name: "legacy tool member", ResourceURL: cases[0].ResourceURL, Bazaar: mustMarshal(t, legacy)})

	modules := testenv.NodeModules(t, filepath.Join("testdata", "bazaar"))
	dir := t.TempDir()
	testenv.Must(t, os.Symlink(modules, filepath.Join(dir, "node_modules")), "link node_modules")
	script, err := os.ReadFile(filepath.Join("testdata", "bazaar", "check.mjs"))
	testenv.Must(t, err, "read check.mjs")
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "check.mjs"), script, 0o644), "copy check.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "check.mjs")
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(mustMarshal(t, all))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	testenv.Must(t, err, "check.mjs: %s", stderr.String())
	var got []struct {
		Name, CatalogURL, ToolName string
		Valid, SpecValid           bool
		Errors, SpecErrors         []string
	}
	testenv.Must(t, json.Unmarshal(out, &got), "decode %s", out)
	if len(got) != len(all) {
		t.Fatalf("check.mjs judged %d of %d", len(got), len(all))
	}
	for i, c := range cases {
		g := got[i]
		if !g.Valid || !g.SpecValid || g.CatalogURL != c.catalogURL || g.ToolName != c.tool {
			t.Errorf("%s: @x402/extensions says %+v; want valid, catalogued as %s %s", c.Name, g, c.catalogURL, c.tool)
		}
	}
	if l := got[len(got)-1]; l.Valid || l.CatalogURL != "" {
		t.Errorf("the official validator accepts the older spec's tool member: %+v", l)
	}
	t.Logf("@x402/extensions 2.27.0: %d tool bazaars valid, the legacy tool member refused (%v)", len(cases), got[len(got)-1].Errors)
}
