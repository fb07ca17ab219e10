package verifier

import (
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/x402"
)

// The catalog is the one source of what is sold: the 402s' bazaar
// extension, /.well-known/x402, the OpenAPI document's x-x402 members and
// /llms.txt are all made from Routes, their Input and the Config.

// Input is how a payable route is called, for discovery: its path
// parameter, query parameters and body, each with an example and a JSON
// Schema, and the file (examples/) holding an example of its answer.
type Input struct {
	PathParam string  // "" for a static route
	Query     []Param // query parameters (GET)
	// Body is an example JSON body and BodySchema its schema (POST).
	Body       string
	BodySchema string
	// Output names the example answer in examples/ (a real answer,
	// trimmed: see TestExamplesMatchOpenAPI).
	Output string
}

// Param is one parameter: its name, an example value and its JSON Schema.
type Param struct {
	Name, Example, Schema string
}

// ExampleAgent is the agent pda used in examples.
const ExampleAgent = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"

const addressSchema = `{"type":"string","pattern":"^[1-9A-HJ-NP-Za-km-z]{32,44}$"}`
const timeSchema = `{"type":"string","description":"RFC 3339 date-time or YYYY-MM-DD"}`

//go:embed examples/*.json
var examples embed.FS

// Example is the example answer of a route ("" when it has none).
func (r Route) Example() json.RawMessage {
	if r.Input.Output == "" {
		return nil
	}
	b, err := examples.ReadFile("examples/" + r.Input.Output)
	if err != nil {
		panic(fmt.Sprintf("x402 verifier: example %s: %v", r.Input.Output, err)) // embedded: a build defect
	}
	return b
}

// Bazaar is the route's bazaar extension; pathValue is the request's
// path parameter ("" for the declaration: the example is used).
func (r Route) Bazaar(pathValue string) x402.Bazaar {
	in := x402.BazaarInput{Type: "http", Method: r.Method}
	props := []string{`"type":{"type":"string","const":"http"}`, `"method":{"type":"string","enum":[` + strconv.Quote(r.Method) + `]}`}
	required := `["type","method"]`
	if r.Input.PathParam != "" {
		if pathValue == "" {
			pathValue = ExampleAgent
		}
		in.PathParams = map[string]string{r.Input.PathParam: pathValue}
		props = append(props, `"pathParams":{"type":"object","properties":{`+strconv.Quote(r.Input.PathParam)+`:`+addressSchema+
			`},"required":[`+strconv.Quote(r.Input.PathParam)+`],"additionalProperties":false}`)
		required = `["type","method","pathParams"]`
	}
	if len(r.Input.Query) > 0 {
		in.QueryParams = map[string]string{}
		var qp []string
		for _, p := range r.Input.Query {
			if p.Example != "" {
				in.QueryParams[p.Name] = p.Example
			}
			qp = append(qp, strconv.Quote(p.Name)+":"+p.Schema)
		}
		props = append(props, `"queryParams":{"type":"object","properties":{`+strings.Join(qp, ",")+`},"additionalProperties":false}`)
	}
	if r.Input.Body != "" {
		in.BodyType, in.Body = "json", json.RawMessage(r.Input.Body)
		props = append(props, `"bodyType":{"type":"string","enum":["json"]}`, `"body":`+r.Input.BodySchema)
		required = `["type","method","bodyType","body"]`
	}
	props = append(props, `"headers":{"type":"object","additionalProperties":{"type":"string"}}`)
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"input":{"type":"object","properties":{` +
		strings.Join(props, ",") + `},"required":` + required + `,"additionalProperties":false},` +
		`"output":{"type":"object","properties":{"type":{"type":"string"},"example":{"type":"object"}},"required":["type"]}},"required":["input"]}`
	b := x402.Bazaar{Info: x402.BazaarInfo{Input: in}, Schema: json.RawMessage(schema)}
	if ex := r.Example(); ex != nil {
		b.Info.Output = &x402.BazaarOutput{Type: "json", Example: ex}
	}
	if r.Input.PathParam != "" {
		b.RouteTemplate = r.APIPath()
	}
	return b
}

// APIPath is the route's path as clients call it (with /api/v1).
func (r Route) APIPath() string { return "/api/v1" + r.Path }

// Offer is what one payable route costs under cfg: the requirements
// without the per-request hints (blockhash), feePayer when known.
func (c Config) Offer(r Route, feePayer string) (x402.Requirements, bool) {
	amount, ok := c.Prices[r.Path]
	if !ok || amount == 0 {
		return x402.Requirements{}, false
	}
	q := x402.Requirements{Scheme: x402.SchemeExact, Network: c.Network.CAIP2, Amount: strconv.FormatUint(amount, 10),
		Asset: c.Asset.String(), PayTo: c.PayTo.String(), MaxTimeoutSeconds: MaxTimeoutSeconds}
	if feePayer != "" {
		q.Extra = &x402.Extra{FeePayer: feePayer}
	}
	return q, true
}

// Price is what the OpenAPI document's x-x402 member of a payable
// operation says, and /llms.txt in words.
type Price struct {
	Price    string   `json:"price"`  // in units of the asset, e.g. "0.01"
	Amount   string   `json:"amount"` // atomic units
	Asset    string   `json:"asset"`
	Symbol   string   `json:"symbol,omitempty"`
	Network  string   `json:"network"`
	PayTo    string   `json:"payTo,omitempty"`
	Schemes  []string `json:"schemes"`
	PriceEnv string   `json:"priceEnv"`
}

// Prices402 are the x-x402 members by "METHOD /path" (the path as
// OpenAPI writes it, below /api/v1, with {name} parameters).
func (c Config) Prices402() map[string]Price {
	out := map[string]Price{}
	for _, r := range Routes {
		q, ok := c.Offer(r, "")
		if !ok {
			continue
		}
		units, _ := q.AmountUnits()
		p := Price{Price: x402.FormatAmount(units, c.Decimals), Amount: q.Amount, Asset: q.Asset, Network: q.Network,
			PayTo: q.PayTo, Schemes: []string{x402.SchemeExact}, PriceEnv: r.Env}
		if c.Asset == c.Network.USDC {
			p.Symbol = "USDC"
		}
		out[r.Method+" "+OpenAPIPath(r.Path)] = p
	}
	return out
}

// OpenAPIPath writes :name parameters as {name}.
func OpenAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Discovery is the /.well-known/x402 document: the origin's payable
// resources in the envelope of a facilitator's GET /discovery/resources
// (items of DiscoveredResource; the proposal x402-foundation/x402#2582),
// with the plain list of "METHOD URL" that simpler crawlers read.
type Discovery struct {
	X402Version  int                       `json:"x402Version"`
	Version      int                       `json:"version"`
	Resources    []string                  `json:"resources"`
	Items        []x402.DiscoveredResource `json:"items"`
	Pagination   x402.DiscoveryPagination  `json:"pagination"`
	Instructions string                    `json:"instructions"`
}

// Discovery paging (the x402 v2 GET /discovery/resources parameters).
const (
	DiscoveryDefaultLimit = 20
	DiscoveryMaxLimit     = 100
)

// Page is the document with only items [offset, offset+limit) (limit
// 1..DiscoveryMaxLimit, offset >= 0: the caller checks); resources keeps
// every route.
func (d Discovery) Page(limit, offset int) Discovery {
	total := len(d.Items)
	lo, hi := min(offset, total), min(offset+limit, total)
	d.Items = d.Items[lo:hi:hi]
	d.Pagination = x402.DiscoveryPagination{Limit: limit, Offset: offset, Total: total}
	return d
}

// OfType is the document with the items of type typ only ("" : every
// item); resources keeps every route.
func (d Discovery) OfType(typ string) Discovery {
	if typ == "" {
		return d
	}
	items := make([]x402.DiscoveredResource, 0, len(d.Items))
	for _, it := range d.Items {
		if it.Type == typ {
			items = append(items, it)
		}
	}
	d.Items = items
	return d
}

// Types are the types of the document's items, each once, in order.
func (d Discovery) Types() []string {
	var types []string
	for _, it := range d.Items {
		if !slices.Contains(types, it.Type) {
			types = append(types, it.Type)
		}
	}
	return types
}

// DiscoveryDocument lists every payable route at origin, then the paid
// tools of its MCP endpoint m (the zero MCPEndpoint: none), all in one
// page (Page cuts the pages served). feePayer is the one the 402s name (""
// while unknown: the accepts then carry no extra). lastUpdated is when the
// configuration was loaded. resources lists the routes alone: each is a
// "METHOD URL" that answers a 402 and takes PAYMENT-SIGNATURE, which the
// MCP endpoint does not (its payments travel inside JSON-RPC).
func (c Config) DiscoveryDocument(origin config.Origin, feePayer string, lastUpdated time.Time, m MCPEndpoint) Discovery {
	updated := lastUpdated.UTC().Format(time.RFC3339)
	d := Discovery{X402Version: 2, Version: 1, Resources: []string{}, Items: []x402.DiscoveredResource{},
		Instructions: "Call a resource without payment to get its 402 (PAYMENT-REQUIRED header, x402 v2, scheme exact on Solana); " +
			"pay with PAYMENT-SIGNATURE; the answer carries PAYMENT-RESPONSE with a signed receipt (offer-receipt extension) " +
			"verifiable with " + origin.URL("/.well-known/jwks.json") + ". Or send an API key in x-api-key instead of paying."}
	for _, r := range Routes {
		q, ok := c.Offer(r, feePayer)
		if !ok {
			continue
		}
		b := r.Bazaar("")
		if b.Info.Output != nil {
			// The example answer is in the route's 402; the catalog keeps
			// its type only, and stays small (it is fetched often).
			b.Info.Output = &x402.BazaarOutput{Type: b.Info.Output.Type}
		}
		bz, err := json.Marshal(b)
		if err != nil {
			continue
		}
		res := origin.URL(r.APIPath())
		d.Resources = append(d.Resources, r.Method+" "+res)
		d.Items = append(d.Items, x402.DiscoveredResource{Resource: res, Type: "http", X402Version: 2,
			Accepts: []x402.Requirements{q}, LastUpdated: updated,
			Metadata: map[string]any{"method": r.Method, "description": r.Description, "mimeType": "application/json",
				"routeTemplate": r.APIPath(), "priceEnv": r.Env},
			Extensions: map[string]json.RawMessage{x402.ExtensionBazaar: bz}})
	}
	sort.SliceStable(d.Items, func(i, j int) bool { return d.Items[i].Resource < d.Items[j].Resource })
	sort.Strings(d.Resources)
	if tools := c.mcpItems(origin, feePayer, updated, m); len(tools) > 0 {
		d.Items = append(d.Items, tools...)
		d.Instructions += mcpInstructions(origin, m)
	}
	d.Pagination = x402.DiscoveryPagination{Limit: len(d.Items), Total: len(d.Items)}
	return d
}

// LLMsText is /llms.txt: what the service sells and how to pay, in words;
// with the node's MCP endpoint m (the zero MCPEndpoint: none), how to
// call and pay its tools.
func (c Config) LLMsText(origin config.Origin, receipts bool, m MCPEndpoint) string {
	var b strings.Builder
	b.WriteString("# attestd\n\n> An index of AI-agent attestations issued on Solana: public reads are free; " +
		"premium answers are sold per request (x402) or with an API key.\n\n")
	b.WriteString("## What is sold\n\n")
	for _, r := range Routes {
		q, ok := c.Offer(r, "")
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "- [%s %s](%s): %s. Price: %s per request.\n", r.Method, r.APIPath(), origin.URL(r.APIPath()), r.Description, c.amountText(q))
	}
	fmt.Fprintf(&b, "\n## How to pay\n\n"+
		"- Protocol: x402 version 2, scheme `exact`, network `%s` (%s), asset `%s`, paid to `%s`.\n"+
		"- Call the resource without payment: the 402 answer's PAYMENT-REQUIRED header (base64 JSON) says what to pay, "+
		"and its `extensions.bazaar` says how to call the resource and what it answers.\n"+
		"- Send the signed payment in the PAYMENT-SIGNATURE header; the answer comes with PAYMENT-RESPONSE (the settled transaction).\n"+
		"- One payment, one answer: the same payment presented again for the same request gets the same answer, byte for byte, "+
		"without a new charge, for %s after it was sold (then 409); every 402 declares the `payment-identifier` "+
		"extension, which makes a paid request idempotent.\n", c.Network.CAIP2, c.Network.Name, c.Asset, c.PayTo, fmtWindow(c.retention()))
	if receipts {
		fmt.Fprintf(&b, "- Every paid answer carries a signed receipt (offer-receipt extension, JWS EdDSA) in PAYMENT-RESPONSE "+
			"`extensions[\"offer-receipt\"].info.receipt`; its key is at %s.\n", origin.URL("/.well-known/jwks.json"))
	}
	fmt.Fprintf(&b, "- Or skip payments: send an API key in the `x-api-key` header.\n\n## Discovery\n\n"+
		"- [Payable resources](%s): price, network, asset, payTo, schemes and input schema of each.\n"+
		"- [OpenAPI](%s): every route; payable operations carry `x-x402` with their price.\n",
		origin.URL("/.well-known/x402"), origin.URL("/api/v1/openapi.json"))
	if m.Path == "" {
		b.WriteString("- MCP: `attestd mcp --http` serves the tools over streamable HTTP; premium tools are paid with `_meta[\"x402/payment\"]` (x402 MCP transport).\n")
	} else {
		b.WriteString(c.mcpText(origin, m))
	}
	b.WriteString(bulkDataText(origin))
	return b.String()
}

// bulkDataText is /llms.txt's section on the daily dataset (docs/dataset.md),
// which every API node serves at /dataset/, free.
func bulkDataText(origin config.Origin) string {
	return fmt.Sprintf("\n## Bulk data\n\n"+
		"- [Dataset index](%s): every finalized attestation as one Parquet file per UTC day (%s, in transparency-log order, "+
		"beside its manifest YYYY-MM-DD.json), free and outside the API's rate limit; the index lists each day's file with its rows, "+
		"bytes and SHA-256, and `pending` says which day comes next and why it is not out yet (503 when the dataset is off on the node).\n"+
		"- For bulk work (counting, aggregating, mirroring, auditing), download the files rather than paging %s: one GET per day, "+
		"Range requests served; DuckDB, Polars and pandas read them directly. Over MCP, the `list_datasets` tool lists them.\n"+
		"- Check a file against a witnessed checkpoint of the log: `attestd verify --dataset YYYY-MM-DD.parquet --url %s "+
		"--log-key KEY --witness WITNESS_KEY` (KEY: the log's verifier key, pinned out of band; %s serves it).\n",
		origin.URL("/dataset/index.json"), origin.URL("/dataset/YYYY-MM-DD.parquet"), origin.URL("/api/v1/attestations"),
		origin.String(), origin.URL("/api/v1/log/key"))
}

// ExtensionOpenAPI is the OpenAPI member that prices a payable operation.
const ExtensionOpenAPI = "x-x402"

// PatchOpenAPI sets the x-x402 member of every payable operation of an
// OpenAPI document (JSON) to this configuration's price, and removes it
// from operations that are not payable here.
func (c Config) PatchOpenAPI(doc []byte) ([]byte, error) {
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("x402: openapi document: %w", err)
	}
	paths, _ := d["paths"].(map[string]any)
	prices := c.Prices402()
	for _, r := range Routes {
		item, _ := paths[OpenAPIPath(r.Path)].(map[string]any)
		op, _ := item[strings.ToLower(r.Method)].(map[string]any)
		if op == nil {
			return nil, fmt.Errorf("x402: openapi document has no %s %s", r.Method, OpenAPIPath(r.Path))
		}
		if p, ok := prices[r.Method+" "+OpenAPIPath(r.Path)]; ok {
			op[ExtensionOpenAPI] = p
		} else {
			delete(op, ExtensionOpenAPI)
		}
	}
	return json.Marshal(d)
}

// retention is AnswerRetention, or its default.
func (c Config) retention() time.Duration {
	if c.AnswerRetention > 0 {
		return c.AnswerRetention
	}
	return DefaultAnswerRetention
}

// The paid tools of a node's MCP endpoint (internal/mcp) are sold by the
// REST routes they call: a tool's price is its route's, and its payment
// is bound to that route's URL (begin.go, otherResource). Discovery lists
// each paid tool as an item of type mcp beside the routes.

// MCP bazaar constants (x402 specs/extensions/bazaar.md, MCP tools).
const (
	// TypeMCP is the type of an MCP tool's discovered resource and of
	// its bazaar input.
	TypeMCP = "mcp"
	// MCPTransport is the transport of the endpoint (the bazaar's
	// transport: "streamable-http" or "sse").
	MCPTransport = "streamable-http"
)

// MCPEndpoint is a node's remote MCP endpoint, as discovery describes it
// (internal/mcp builds it: Path, Revisions, ToolNames, PaidTools). The zero
// value is no endpoint.
type MCPEndpoint struct {
	Path      string    // at the origin's root, e.g. /mcp
	Revisions []string  // MCP revisions it speaks, newest first
	Tools     []string  // every tool, free and paid
	Paid      []MCPTool // the paid tools
}

// MCPTool is one paid tool of the endpoint: as tools/list gives it, and
// the REST route it calls and pays for.
type MCPTool struct {
	Name        string
	Description string
	// InputSchema is the tool's inputSchema, as tools/list gives it.
	InputSchema json.RawMessage
	// Example is the arguments of an example call (nil: none).
	Example json.RawMessage
	// Route is the REST route the tool calls, as Routes name it
	// (/premium/forensic-report/:agentId): its price is the tool's.
	Route string
}

// MCPBazaar is the bazaar extension of an MCP tool: the shape of the
// official @x402/extensions declareDiscoveryExtension({toolName, ...}).
type MCPBazaar struct {
	Info struct {
		Input MCPBazaarInput `json:"input"`
	} `json:"info"`
	Schema json.RawMessage `json:"schema"`
	// RouteTemplate is the catalog key of the resource when its URL has
	// path parameters (see Bazaar); "" for the endpoint's own URL.
	RouteTemplate string `json:"routeTemplate,omitempty"`
}

// MCPBazaarInput is info.input of an MCP tool's bazaar.
type MCPBazaarInput struct {
	Type        string          `json:"type"`
	ToolName    string          `json:"toolName"`
	Description string          `json:"description,omitempty"`
	Transport   string          `json:"transport"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Example     json.RawMessage `json:"example,omitempty"`
}

// Bazaar is the tool's bazaar extension: info.input of type mcp (toolName,
// description, transport, inputSchema, example) and, in schema, the JSON
// Schema (draft 2020-12) of info as the official builder writes it:
// type, toolName and inputSchema required, no other member than those
// present. routeTemplate ("" none) is kept beside info for a resource URL
// with path parameters: a tool's payment error names its route's URL
// (/api/v1/premium/forensic-report/AGENT), and facilitators key their
// catalog by origin and routeTemplate, not by each agent's URL.
func (t MCPTool) Bazaar(routeTemplate string) (MCPBazaar, error) {
	var b MCPBazaar
	if t.Name == "" || !json.Valid(t.InputSchema) || t.InputSchema[0] != '{' {
		return b, fmt.Errorf("x402: MCP tool %q: a name and an inputSchema object are needed", t.Name)
	}
	if t.Example != nil && (!json.Valid(t.Example) || t.Example[0] != '{') {
		return b, fmt.Errorf("x402: MCP tool %q: the example arguments are not a JSON object", t.Name)
	}
	b.Info.Input = MCPBazaarInput{Type: TypeMCP, ToolName: t.Name, Description: t.Description, Transport: MCPTransport,
		InputSchema: t.InputSchema, Example: t.Example}
	props := []string{`"type":{"type":"string","const":"mcp"}`, `"toolName":{"type":"string"}`}
	if t.Description != "" {
		props = append(props, `"description":{"type":"string"}`)
	}
	props = append(props, `"transport":{"type":"string","enum":[`+strconv.Quote(MCPTransport)+`]}`, `"inputSchema":{"type":"object"}`)
	if t.Example != nil {
		props = append(props, `"example":{"type":"object"}`)
	}
	b.Schema = json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"input":{"type":"object","properties":{` +
		strings.Join(props, ",") + `},"required":["type","toolName","inputSchema"],"additionalProperties":false}},"required":["input"]}`)
	b.RouteTemplate = routeTemplate
	return b, nil
}

// RouteOf is the payable route named path (as Routes name it).
func RouteOf(path string) (Route, bool) {
	for _, r := range Routes {
		if r.Path == path {
			return r, true
		}
	}
	return Route{}, false
}

// mcpItems are the endpoint's paid tools as discovered resources: the
// endpoint's URL, the price of the route each calls, and the tool's
// bazaar. A tool whose route is not payable here is not listed.
func (c Config) mcpItems(origin config.Origin, feePayer, updated string, m MCPEndpoint) []x402.DiscoveredResource {
	var items []x402.DiscoveredResource
	for _, t := range m.Paid {
		r, ok := RouteOf(t.Route)
		if !ok {
			continue
		}
		q, ok := c.Offer(r, feePayer)
		if !ok {
			continue
		}
		b, err := t.Bazaar("")
		if err != nil {
			continue
		}
		bz, err := json.Marshal(b)
		if err != nil {
			continue
		}
		items = append(items, x402.DiscoveredResource{Resource: origin.URL(m.Path), Type: TypeMCP, X402Version: 2,
			Accepts: []x402.Requirements{q}, LastUpdated: updated,
			Metadata: map[string]any{"toolName": t.Name, "description": t.Description, "transport": MCPTransport,
				"mimeType": "application/json", "paidRoute": r.APIPath(), "priceEnv": r.Env},
			Extensions: map[string]json.RawMessage{x402.ExtensionBazaar: bz}})
	}
	return items
}

// mcpInstructions are the discovery document's words on the endpoint.
func mcpInstructions(origin config.Origin, m MCPEndpoint) string {
	return " MCP: the items of type mcp are the paid tools of " + origin.URL(m.Path) + " (one item per tool: resource and " +
		"metadata.toolName; stateless streamable HTTP), each priced as the REST route it calls (metadata.paidRoute). " +
		"Call the tool (tools/call) without payment: the tool error's content[0].text holds the requirements " +
		"({\"x402/error\":{\"code\":402,...,\"data\":PaymentRequired}}), whose resource is that route's URL, to which the payment is bound; " +
		"send the PaymentPayload in params._meta[\"x402/payment\"] (x402 MCP transport) and read the settlement in " +
		"result._meta[\"x402/payment-response\"]. Or send the API key on the MCP request (Authorization: Bearer or X-API-Key)."
}

// mcpText is /llms.txt's section on the endpoint.
func (c Config) mcpText(origin config.Origin, m MCPEndpoint) string {
	var b strings.Builder
	var free, paid, prices []string
	paidNames := map[string]bool{}
	for _, t := range m.Paid {
		paidNames[t.Name] = true
	}
	for _, name := range m.Tools {
		if paidNames[name] {
			paid = append(paid, "`"+name+"`")
		} else {
			free = append(free, "`"+name+"`")
		}
	}
	for _, t := range m.Paid {
		r, ok := RouteOf(t.Route)
		if !ok {
			continue
		}
		if q, ok := c.Offer(r, ""); ok {
			prices = append(prices, fmt.Sprintf("`%s` %s (as %s %s)", t.Name, c.amountText(q), r.Method, r.APIPath()))
		}
	}
	fmt.Fprintf(&b, "\n## MCP\n\n- Endpoint: %s, MCP over stateless streamable HTTP (one JSON-RPC message per POST, JSON answers, "+
		"no session), revisions %s.\n", origin.URL(m.Path), strings.Join(m.Revisions, ", "))
	fmt.Fprintf(&b, "- Tools: %s (free); %s (paid).\n", strings.Join(free, ", "), strings.Join(paid, ", "))
	if len(prices) > 0 {
		fmt.Fprintf(&b, "- Prices per call: %s.\n", strings.Join(prices, "; "))
	}
	b.WriteString("- Pay per call with the x402 MCP transport: an unpaid call answers a tool error whose `content[0].text` holds " +
		"the payment requirements (`x402/error`, code 402); send the payment in `params._meta[\"x402/payment\"]`, the settlement " +
		"comes back in `result._meta[\"x402/payment-response\"]`. Or send your API key on the MCP request " +
		"(`Authorization: Bearer KEY` or `X-API-Key`).\n" +
		"- Each MCP request counts once against the caller's per-IP rate limit, whatever it calls.\n")
	return b.String()
}

// amountText is q's amount in words: "0.05 USDC", or atomic units of
// another token.
func (c Config) amountText(q x402.Requirements) string {
	units, _ := q.AmountUnits()
	if c.Asset == c.Network.USDC {
		return x402.FormatAmount(units, c.Decimals) + " USDC"
	}
	return q.Amount + " atomic units of token " + q.Asset
}
