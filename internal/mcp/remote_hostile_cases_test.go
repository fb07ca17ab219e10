package mcp_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"github.com/gofiber/fiber/v2"
)

// matrixEnv is what the hostile matrix is built from: the node's host and
// the fixture's records, key and payments.
type matrixEnv struct {
	host         string // host:port of the node's public origin
	agent, other string // an agent with attestations, and another agent
	pda          string // an attestation of agent
	ids          []string
	key          string // a valid API key ("" : none)
	// tools are the properties of each tool's arguments and their JSON
	// types, as tools/list declares them.
	tools map[string]map[string]string
	// payments are x402 PaymentPayloads as JSON, by name; none: no paying
	// node behind the endpoint, and no payment rows.
	payments map[string]string
}

// hostileEnv reads the tools' arguments and get_full_history's price from
// the node, and builds the payments the matrix presents, all of a second
// payer: none of them is the genuine payment of the fixture's payer,
// replayed after the matrix, which it returns.
func hostileEnv(t *testing.T, f *fixture, w *wallets, tg *hostileTarget) (matrixEnv, string) {
	t.Helper()
	env := matrixEnv{host: tg.host, agent: f.agent, other: f.env.Seeded.Agents[1].PDA.String(), pda: f.textPDA,
		ids: []string{f.jsonPDA, f.textPDA, f.forgedPDA, unknownPDA}, key: f.key, tools: toolProperties(t, tg)}
	_, _, r := mcpPoster{url: tg.url}.call(t, mcp.ToolGetFullHistory, `{"agentPda":`+jsonText(f.agent)+`}`, "")
	pr := paymentError(t, "unpaid get_full_history", r, "Payment required")
	build := func(q x402.Requirements, payer solana.PrivateKey) string {
		wire, err := x402.BuildExact(q, x402.Payment{Payer: payer, Blockhash: w.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		return mustJSON(t, x402.NewPaymentPayload(pr.Resource, q, wire))
	}
	second := w.chain.NewKeypair()
	_, err := w.chain.FundWallet(second.PublicKey(), solana.LAMPORTS_PER_SOL, 1_000_000)
	testenv.Must(t, err, "fund a second payer")
	q := pr.Accepts[0]
	genuine, cheaper := build(q, second), q
	cheaper.Amount = "1"
	env.payments = map[string]string{"genuine": genuine, "amount": build(cheaper, second), "empty": "{}",
		"version 1": tamper(t, genuine, "x402Version", 1), "version 3": tamper(t, genuine, "x402Version", 3),
		"scheme": tamper(t, genuine, "accepted.scheme", "upto"), "network": tamper(t, genuine, "accepted.network", x402.Mainnet.CAIP2),
		"asset": tamper(t, genuine, "accepted.asset", x402.Mainnet.USDC.String()), "transaction": tamper(t, genuine, "payload.transaction", "AAAA"),
		"payTo": tamper(t, genuine, "accepted.payTo", second.PublicKey().String())}
	return env, build(q, w.Payer)
}

// tamper sets the member at the dotted path of the JSON object payment
// to v.
func tamper(t *testing.T, payment, path string, v any) string {
	t.Helper()
	var m map[string]any
	testenv.Must(t, json.Unmarshal([]byte(payment), &m), "payment")
	obj, keys := m, strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		obj = obj[k].(map[string]any)
	}
	obj[keys[len(keys)-1]] = v
	return mustJSON(t, m)
}

// wantKind is the class of answer a case must get.
type wantKind int

const (
	anyAnswer   wantKind = iota // the promises alone
	refusal                     // an HTTP-level refusal in the error envelope
	misuse                      // protocol misuse: 400 INVALID_PARAM, or a JSON-RPC error (200, 400, 404)
	rpcFailure                  // a JSON-RPC error (HTTP 200)
	toolFailure                 // a tool result with isError
	answer                      // a result that is not an error
	payFailure                  // the x402 transport's payment error
	acceptance                  // 202 Accepted without a body
)

// expect is what a case must be answered with, beyond the promises.
type expect struct {
	kind   wantKind
	status int    // refusal: the status (0: any 4xx)
	code   string // refusal: the envelope's code
	rpc    int    // rpcFailure: the JSON-RPC code (0: any)
	text   string // in the error's message, the tool's text or the payment error
	absent string // nowhere in the answer
}

// Expectations, by class.

func refused(status int, code, text string) expect {
	return expect{kind: refusal, status: status, code: code, text: text}
}
func misused() expect                     { return expect{kind: misuse} }
func rpcErr(code int, text string) expect { return expect{kind: rpcFailure, rpc: code, text: text} }
func toolErr(text string) expect          { return expect{kind: toolFailure, text: text} }
func answered() expect                    { return expect{kind: answer} }
func payErr(reason string) expect         { return expect{kind: payFailure, text: reason} }
func notified() expect                    { return expect{kind: acceptance} }
func (w expect) without(s string) expect  { w.absent = s; return w }
func tooLarge() expect                    { return refused(http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "") }
func invalid(text string) expect          { return refused(http.StatusBadRequest, "INVALID_PARAM", text) }
func forbidden() expect                   { return refused(http.StatusForbidden, "FORBIDDEN", "") }

// Builders of requests.

func jsonText(s string) string             { b, _ := json.Marshal(s); return string(b) }
func withKey(key string) http.Header       { return header("X-Api-Key", key) }
func rpcBody(method, params string) []byte { return rpcWithID("1", method, params) }
func (cs *caseSet) add(c ...hostileCase)   { *cs = append(*cs, c...) }

// nested is leaf in n nested objects.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"a":`, n) + leaf + strings.Repeat("}", n)
}

// header is the header of names and values kv, a name as often as given.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := http.CanonicalHeaderKey(kv[i])
		h[k] = append(h[k], kv[i+1])
	}
	return h
}

// rpcWithID is a JSON-RPC request of method with id (JSON; "" : a
// notification) and params ("" : none).
func rpcWithID(id, method, params string) []byte {
	b := `{"jsonrpc":"2.0",`
	if id != "" {
		b += `"id":` + id + `,`
	}
	b += `"method":` + jsonText(method)
	if params != "" {
		b += `,"params":` + params
	}
	return []byte(b + "}")
}

// callTool is tools/call of tool with args and, when meta is not "",
// _meta.
func callTool(tool, args, meta string) []byte {
	p := `{"name":` + jsonText(tool) + `,"arguments":` + args
	if meta != "" {
		p += `,"_meta":` + meta
	}
	return rpcBody("tools/call", p+"}")
}

// caseSet collects the matrix's cases in the order they are built.
type caseSet []hostileCase

// hostileCases is the whole matrix for e.
func hostileCases(e matrixEnv) []hostileCase {
	var cs caseSet
	cs.bounds(e)
	cs.shapes(e)
	cs.methods(e)
	cs.ids()
	cs.arguments(e)
	cs.metas(e)
	cs.payments(e)
	cs.origins(e)
	cs.hosts(e)
	cs.credentials(e)
	cs.protocolHeaders(e)
	cs.mediaTypes(e)
	cs.httpMethods(e)
	return cs
}

// bodyOf is a ping padded in _meta to n bytes.
func bodyOf(n int) []byte {
	head, tail := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"`, `"}}}`
	return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}

// bulk is bulk_verify's arguments with n ids, taken in turn from ids.
func bulk(n int, ids ...string) string {
	var b strings.Builder
	b.WriteString(`{"ids":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonText(ids[i%len(ids)]))
	}
	return b.String() + "]}"
}

// bounds: bodies at and over the endpoint's bound and the node's, sent
// whole, chunked or announced and withheld; huge strings and arrays.
func (cs *caseSet) bounds(e matrixEnv) {
	raw := func(length, body string) string {
		return "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"Connection: close\r\nContent-Length: " + length + "\r\n\r\n" + body
	}
	agent := `{"agentPda":` + jsonText(e.agent) + `}`
	big := strings.Repeat("A", 200<<10)
	cs.add(
		hostileCase{name: "body of exactly MaxRemoteBody bytes", body: bodyOf(mcp.MaxRemoteBody), want: answered()},
		hostileCase{name: "body one byte over MaxRemoteBody", body: bodyOf(mcp.MaxRemoteBody + 1), want: tooLarge()},
		hostileCase{name: "body of 2 MiB", body: bodyOf(2 << 20), mayClose: true, want: tooLarge()},
		hostileCase{name: "chunked body of exactly MaxRemoteBody bytes", chunked: true, body: bodyOf(mcp.MaxRemoteBody), want: answered()},
		hostileCase{name: "chunked body one byte over MaxRemoteBody", chunked: true, body: bodyOf(mcp.MaxRemoteBody + 1), want: tooLarge()},
		hostileCase{name: "chunked body of 2 MiB", chunked: true, body: bodyOf(2 << 20), mayClose: true, want: tooLarge()},
		hostileCase{name: "Content-Length of 1 GiB, one byte sent", raw: raw("1073741824", "{"), want: tooLarge()},
		hostileCase{name: "Content-Length over MaxRemoteBody, a few bytes sent, then the write side closed",
			raw: raw(strconv.Itoa(mcp.MaxRemoteBody+1), `{"jsonrpc":"2.0"`), halfClose: true, mayClose: true},
		hostileCase{name: "Content-Length of 1 GiB with Expect: 100-continue", raw: strings.Replace(raw("1073741824", ""),
			"Connection: close\r\n", "Connection: close\r\nExpect: 100-continue\r\n", 1), want: refused(0, "", "")},
		hostileCase{name: "empty body", body: []byte{}, want: misused()},
		hostileCase{name: "white space only", body: []byte(" \r\n\t "), want: misused()},
		hostileCase{name: "300 KiB of white space", body: []byte(strings.Repeat(" ", 300<<10)), want: tooLarge()},
		hostileCase{name: "a 200 KiB payload to verify", body: callTool("verify_action_hash", `{"payload":"`+big+`"}`, ""), want: answered()},
		hostileCase{name: "a 200 KiB agentPda", body: callTool("get_agent", `{"agentPda":"`+big+`"}`, ""), want: toolErr("agentPda")},
		hostileCase{name: "a 200 KiB tool name", body: callTool(big, agent, ""), want: rpcErr(-32602, "unknown tool")},
		hostileCase{name: "a 64 KiB method name", body: rpcBody(big[:64<<10], "{}"), want: misused()},
		hostileCase{name: "bulk_verify of 1000 ids with a key", header: withKey(e.key), body: callTool("bulk_verify", bulk(1000, e.ids...), ""), want: answered()},
		hostileCase{name: "bulk_verify of 1001 ids with a key", header: withKey(e.key), body: callTool("bulk_verify", bulk(1001, e.ids...), ""), want: toolErr("ids")},
		hostileCase{name: "bulk_verify of 100000 ids", body: callTool("bulk_verify", bulk(100000, "1"), ""), want: tooLarge()},
		hostileCase{name: "bulk_verify of no ids with a key", header: withKey(e.key), body: callTool("bulk_verify", `{"ids":[]}`, ""), want: toolErr("ids")},
	)
	if e.payments != nil {
		cs.add(hostileCase{name: "bulk_verify of 1000 ids unpaid", body: callTool("bulk_verify", bulk(1000, e.ids...), ""), want: payErr("")})
	}
}

// shapes: batches, JSON that is not an object, malformed JSON, invalid
// UTF-8 and NUL bytes, duplicate keys, and nesting at and past MaxDepth.
func (cs *caseSet) shapes(e matrixEnv) {
	ping := string(rpcBody("ping", "{}"))
	agent := `"agentPda":` + jsonText(e.agent)
	for name, b := range map[string]string{
		"an empty batch": `[]`, "a batch of one": "[" + ping + "]", "a batch of 100": "[" + strings.Repeat(ping+",", 99) + ping + "]",
		"a nested batch": "[[" + ping + "]]", "a batch after white space": " \r\n\t[" + ping + "]", "a batch of nulls": "[null,null]",
	} {
		cs.add(hostileCase{name: name, body: []byte(b), want: invalid("batches")})
	}
	for _, m := range []struct{ name, body string }{
		{"null", "null"}, {"a number", "1"}, {"a string", `"x"`}, {"true", "true"}, {"false", "false"}, {"1e999", "1e999"},
		{"an empty object", "{}"}, {"no method", `{"jsonrpc":"2.0"}`}, {"cut short", `{"jsonrpc":`}, {"trailing bytes", ping + "xyz"},
		{"two messages", ping + ping}, {"a byte order mark", "\xef\xbb\xbf" + ping}, {"a byte order mark, a batch", "\xef\xbb\xbf[" + ping + "]"},
		{"JSON-RPC 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`}, {"no jsonrpc", `{"id":1,"method":"ping"}`},
		{"a raw NUL in the method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\x00\"}"},
		{"a raw NUL between members", "{\"jsonrpc\":\"2.0\",\x00\"id\":1,\"method\":\"ping\"}"},
		{"invalid UTF-8 in the method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\xfe\"}"},
		{"an escaped NUL in the method", `{"jsonrpc":"2.0","id":1,"method":"tools/list\u0000"}`},
		{"closing brackets only", strings.Repeat("]", 40) + strings.Repeat("}", 40)}, {"opening braces only", "{" + strings.Repeat("{", 40)},
	} {
		cs.add(hostileCase{name: "malformed: " + m.name, body: []byte(m.body), want: misused()})
	}
	cs.add(
		hostileCase{name: "invalid UTF-8 in agentPda", body: callTool("get_agent", "{\"agentPda\":\"\xff\xfe\xfd\"}", ""), want: toolErr("agentPda")},
		hostileCase{name: "a lone surrogate in agentPda", body: callTool("get_agent", `{"agentPda":"\ud800"}`, ""), want: toolErr("agentPda")},
		hostileCase{name: "invalid UTF-8 in a key", body: callTool("get_agent", "{"+agent+",\"\xff\":1}", ""), want: toolErr("")},
		hostileCase{name: "an escaped NUL in agentPda", body: callTool("get_agent", `{"agentPda":"\u0000"}`, ""), want: toolErr("agentPda")},
		hostileCase{name: "a raw NUL in agentPda", body: callTool("get_agent", "{\"agentPda\":\"\x00\"}", ""), want: misused()},
		hostileCase{name: "an escaped NUL in the payload", body: callTool("verify_action_hash", `{"payload":"a\u0000b"}`, ""), want: answered()},
	)
	dup := map[string]string{
		"method":             `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"get_stats","arguments":{}}}`,
		"escaped method":     `{"jsonrpc":"2.0","id":1,"method":"tools/list","\u006dethod":"ping","params":{}}`,
		"id":                 `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		"jsonrpc":            `{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"ping"}`,
		"params":             `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"},"params":{"name":"get_stats","arguments":{}}}`,
		"name":               string(rpcBody("tools/call", `{"name":"get_stats","name":"get_agent","arguments":{`+agent+`}}`)),
		"name, premium last": string(rpcBody("tools/call", `{"name":"get_agent","name":"get_full_history","arguments":{`+agent+`}}`)),
		"arguments":          string(rpcBody("tools/call", `{"name":"get_agent","arguments":{"agentPda":"x"},"arguments":{`+agent+`}}`)),
		"agentPda":           string(callTool("get_agent", `{"agentPda":"x",`+agent+`}`, "")),
		"_meta":              string(rpcBody("tools/call", `{"name":"get_agent","arguments":{`+agent+`},"_meta":{"a":1},"_meta":{"b":2}}`)),
		"in _meta":           string(callTool("get_agent", "{"+agent+"}", `{"progressToken":1,"progressToken":2}`)),
	}
	for k, b := range dup {
		cs.add(hostileCase{name: "duplicate key: " + k, body: []byte(b), want: invalid("")})
	}
	cs.depths(e)
}

// depths: JSON nested to exactly MaxDepth and one past it, in params,
// arguments and _meta, and far past it.
func (cs *caseSet) depths(e matrixEnv) {
	agent := `"agentPda":` + jsonText(e.agent)
	d := mcp.MaxDepth
	// The message is depth 1, params 2, arguments and _meta 3.
	at := func(where string, n int) []byte {
		switch where {
		case "params":
			return rpcBody("tools/call", `{"name":"get_agent","arguments":{`+agent+`},"x":`+nested(n, "1")+`}`)
		case "arguments":
			return callTool("get_agent", "{"+agent+`,"x":`+nested(n, "1")+"}", "")
		}
		return callTool("get_agent", "{"+agent+"}", nested(n+1, "1"))
	}
	cs.add(
		hostileCase{name: "params nested to MaxDepth", body: at("params", d-2), want: answered()},
		hostileCase{name: "params nested past MaxDepth", body: at("params", d-1), want: invalid("nests deeper")},
		hostileCase{name: "arguments nested to MaxDepth", body: at("arguments", d-3), want: toolErr("")},
		hostileCase{name: "arguments nested past MaxDepth", body: at("arguments", d-2), want: invalid("nests deeper")},
		hostileCase{name: "_meta nested to MaxDepth", body: at("_meta", d-3), want: answered()},
		hostileCase{name: "_meta nested past MaxDepth", body: at("_meta", d-2), want: invalid("nests deeper")},
		hostileCase{name: "arrays nested past MaxDepth", body: callTool("get_agent", "{"+agent+`,"x":`+strings.Repeat("[", d)+strings.Repeat("]", d)+"}", ""), want: invalid("nests deeper")},
		hostileCase{name: "100000 open brackets", body: []byte("{" + strings.Repeat("[", 100000)), want: invalid("nests deeper")},
		hostileCase{name: "brackets inside strings do not nest", body: callTool("verify_action_hash", `{"payload":"`+strings.Repeat("[{", 1000)+`\"\\"}`, ""), want: answered()},
	)
}

// methods: unknown, odd and unoffered methods, tools/call's params
// misshapen, notifications against requests.
func (cs *caseSet) methods(e matrixEnv) {
	agent := `{"agentPda":` + jsonText(e.agent) + `}`
	for _, m := range []string{"rpc.discover", "../", "../../etc/passwd", "", "tools/", "tools/list/", "TOOLS/LIST", "tasks/list",
		"sampling/createMessage", "elicitation/create", "roots/list", "notifications/initialized"} {
		cs.add(hostileCase{name: "method " + jsonText(m), body: rpcBody(m, "{}"), want: misused()})
	}
	for _, m := range []string{"prompts/list", "prompts/get", "resources/list", "resources/read", "resources/templates/list",
		"resources/subscribe", "completion/complete", "subscriptions/listen"} {
		cs.add(hostileCase{name: "unoffered " + m, body: rpcBody(m, `{"name":"x","uri":"file:///etc/passwd","notifications":{}}`), want: rpcErr(-32601, m)})
	}
	cs.add(
		hostileCase{name: "method a number", body: []byte(`{"jsonrpc":"2.0","id":1,"method":1}`), want: misused()},
		hostileCase{name: "tools/call without params", body: rpcBody("tools/call", ""), want: misused()},
		hostileCase{name: "tools/call, params null", body: rpcBody("tools/call", "null"), want: rpcErr(-32600, "")},
		hostileCase{name: "tools/call, params an array", body: rpcBody("tools/call", "[1]"), want: rpcErr(-32602, "")},
		hostileCase{name: "tools/call, params a string", body: rpcBody("tools/call", `"get_stats"`), want: rpcErr(-32602, "")},
		hostileCase{name: "tools/call, name a number", body: rpcBody("tools/call", `{"name":1}`), want: rpcErr(-32602, "")},
		hostileCase{name: "tools/call, name an object", body: rpcBody("tools/call", `{"name":{"a":"get_stats"}}`), want: rpcErr(-32602, "")},
		hostileCase{name: "tools/call without a name", body: rpcBody("tools/call", `{"arguments":{}}`), want: rpcErr(-32602, "")},
		hostileCase{name: "an unknown tool", body: callTool("get_secrets", "{}", ""), want: rpcErr(-32602, "unknown tool")},
		hostileCase{name: "a tool name with a path", body: callTool("../get_stats", "{}", ""), want: rpcErr(-32602, "unknown tool")},
		hostileCase{name: "a tool name with a NUL", body: callTool("get_stats\x00", "{}", ""), want: rpcErr(-32602, "unknown tool")},
		hostileCase{name: "a tool name in capitals", body: callTool("GET_AGENT", agent, ""), want: rpcErr(-32602, "unknown tool")},
		hostileCase{name: "initialize", body: rpcBody("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`), want: answered()},
		hostileCase{name: "initialize of an unknown revision", body: rpcBody("initialize", `{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`)},
		hostileCase{name: "ping", body: rpcBody("ping", ""), want: answered()},
		hostileCase{name: "tools/list with a forged cursor", body: rpcBody("tools/list", `{"cursor":"`+strings.Repeat("Zm9v", 100)+`"}`)},
		hostileCase{name: "notification initialized", body: rpcWithID("", "notifications/initialized", ""), want: notified()},
		hostileCase{name: "notification cancelled", body: rpcWithID("", "notifications/cancelled", `{"requestId":1}`), want: notified()},
		hostileCase{name: "an unknown notification", body: rpcWithID("", "notifications/nope", "{}"), want: misused()},
		hostileCase{name: "tools/call as a notification", body: rpcWithID("", "tools/call", `{"name":"get_stats","arguments":{}}`), want: misused()},
		hostileCase{name: "a response sent to the server", body: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)},
		hostileCase{name: "a response without result or error", body: []byte(`{"jsonrpc":"2.0","id":1}`)},
		hostileCase{name: "an error sent to the server", body: []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`)},
	)
}

// ids: JSON-RPC ids of every type and size; a request's id is answered
// as it was sent (judged for every answer) or the request is refused.
func (cs *caseSet) ids() {
	for _, id := range []string{"null", "{}", "[1]", "true", "1e400"} {
		cs.add(hostileCase{name: "id " + id, body: rpcWithID(id, "ping", ""), want: misused()})
	}
	for _, id := range []string{"0", "-1", `""`, `"` + strings.Repeat("i", 100<<10) + `"`, "9007199254740993", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "18446744073709551616", "1.5", "1e3", "-0"} {
		cs.add(hostileCase{name: "id " + excerptOf(id, 24), body: rpcWithID(id, "ping", "")})
	}
}

// arguments: for every tool, each argument of every wrong JSON type, the
// arguments themselves of wrong types, and an argument the tool lacks.
func (cs *caseSet) arguments(e matrixEnv) {
	valid := map[string]string{"get_attestation": `"pda":` + jsonText(e.pda), "verify_action_hash": `"payload":"x"`,
		"bulk_verify": `"ids":[` + jsonText(e.pda) + `]`}
	for _, tool := range []string{"get_agent", "get_agent_stats", "get_full_history", "get_forensic_report"} {
		valid[tool] = `"agentPda":` + jsonText(e.agent)
	}
	wrong := map[string][]string{"string": {"1", "true", "{}", `["x"]`, "null"}, "integer": {`"1"`, "1.5", "true", "{}", "null", "1e400"},
		"array": {`"x"`, "{}", "1", "null", "[1]"}}
	tools := make([]string, 0, len(e.tools))
	for tool := range e.tools {
		tools = append(tools, tool)
	}
	sort.Strings(tools)
	for _, tool := range tools {
		props := e.tools[tool]
		names := make([]string, 0, len(props))
		for p := range props {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			for _, v := range wrong[props[p]] {
				args := `"` + p + `":` + v
				if base := valid[tool]; base != "" && !strings.HasPrefix(base, `"`+p+`"`) {
					args = base + "," + args
				}
				cs.add(hostileCase{name: fmt.Sprintf("%s %s=%s", tool, p, v), body: callTool(tool, "{"+args+"}", ""), want: toolErr(p)})
			}
		}
		for _, v := range []string{`"x"`, "[]", "1", "true"} {
			cs.add(hostileCase{name: fmt.Sprintf("%s arguments=%s", tool, v), body: callTool(tool, v, ""), want: toolErr("")})
		}
		args := `"noSuchArgument":1`
		if valid[tool] != "" {
			args = valid[tool] + "," + args
		}
		cs.add(hostileCase{name: tool + " with an argument it lacks", body: callTool(tool, "{"+args+"}", ""), want: toolErr("noSuchArgument")})
	}
	for _, a := range []string{`{"limit":0}`, `{"limit":101}`, `{"offset":-1}`, `{"from":"yesterday"}`, `{"from":"2026-02-30"}`,
		`{"cursor":"` + strings.Repeat("%", 500) + `"}`, `{"limit":5,"cursor":"x","offset":1}`} {
		cs.add(hostileCase{name: "list_attestations " + a, body: callTool("list_attestations", a, ""), want: toolErr("")})
	}
}

// metas: huge _meta (many keys, long values), _meta of other types, and
// the protocol revision named in _meta alone.
func (cs *caseSet) metas(e matrixEnv) {
	agent := `{"agentPda":` + jsonText(e.agent) + `}`
	var many strings.Builder
	many.WriteString("{")
	for i := range 10000 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	many.WriteString(`"end":0}`)
	cs.add(
		hostileCase{name: "_meta of 10000 keys", body: callTool("get_agent", agent, many.String()), want: answered()},
		hostileCase{name: "_meta with a 200 KiB value", body: callTool("get_agent", agent, `{"v":"`+strings.Repeat("v", 200<<10)+`"}`), want: answered()},
		hostileCase{name: "_meta a string", body: callTool("get_agent", agent, `"x"`), want: rpcErr(-32602, "")},
		hostileCase{name: "_meta an array", body: callTool("get_agent", agent, `[1,2]`), want: rpcErr(-32602, "")},
		hostileCase{name: "_meta null", body: callTool("get_agent", agent, `null`), want: answered()},
		hostileCase{name: "_meta with a progress token object", body: callTool("get_agent", agent, `{"progressToken":{"a":1}}`)},
		hostileCase{name: "_meta naming revision 2026-07-28 without its header", body: callTool("get_agent", agent,
			`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), want: misused()},
	)
}

// payments: forged, foreign and misplaced x402 payments, and forged
// settlements sent by the client; none of them may be charged.
func (cs *caseSet) payments(e matrixEnv) {
	if e.payments == nil {
		return
	}
	const forged = "forgedByTheClient"
	hist := `{"agentPda":` + jsonText(e.agent) + `}`
	pay := func(p string) string { return `{"x402/payment":` + p + `}` }
	for name, p := range map[string]string{"a string": jsonText(e.payments["genuine"]), "an array": "[" + e.payments["genuine"] + "]",
		"a number": "402", "true": "true", "null": "null"} {
		cs.add(hostileCase{name: "payment " + name, body: callTool("get_full_history", hist, pay(p)), want: payErr("PaymentPayload object")})
	}
	for _, name := range []string{"version 1", "version 3", "scheme", "network", "asset", "payTo", "amount", "transaction", "empty"} {
		cs.add(hostileCase{name: "payment with a wrong " + name, body: callTool("get_full_history", hist, pay(e.payments[name])), want: payErr("")})
	}
	forgedResponse := `"x402/payment-response":{"success":true,"transaction":"` + forged + `","network":"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1","payer":"` + forged + `"}`
	cs.add(
		hostileCase{name: "a real payment for another tool", body: callTool("bulk_verify", `{"ids":[`+jsonText(e.pda)+`]}`, pay(e.payments["genuine"])),
			want: payErr("invalid_payment_resource")},
		hostileCase{name: "a real payment for another resource", body: callTool("get_full_history", `{"agentPda":`+jsonText(e.other)+`}`,
			pay(e.payments["genuine"])), want: payErr("invalid_payment_resource")},
		hostileCase{name: "a real payment on a free tool", body: callTool("get_agent", hist, pay(e.payments["genuine"])), want: answered().without("x402/payment-response")},
		hostileCase{name: "a forged settlement, unpaid", body: callTool("get_full_history", hist, "{"+forgedResponse+"}"), want: payErr("").without(forged)},
		hostileCase{name: "a forged settlement on a free tool", body: callTool("get_agent", hist, "{"+forgedResponse+"}"), want: answered().without(forged)},
		hostileCase{name: "a forged settlement with a key", header: withKey(e.key), body: callTool("get_full_history", hist, "{"+forgedResponse+"}"),
			want: answered().without(forged)},
		hostileCase{name: "a forged settlement beside a payment for another resource", body: callTool("get_full_history", `{"agentPda":`+jsonText(e.other)+`}`,
			`{"x402/payment":`+e.payments["genuine"]+","+forgedResponse+"}"), want: payErr("").without(forged)},
		hostileCase{name: "a payment twice in _meta", body: callTool("get_full_history", hist, `{"x402/payment":`+e.payments["amount"]+
			`,"x402/payment":`+e.payments["version 1"]+"}"), want: invalid("")},
		hostileCase{name: "a 200 KB payment", body: callTool("get_full_history", hist, pay(`{"x402Version":2,"pad":"`+strings.Repeat("A", 200_000)+`"}`)),
			want: payErr("at most")},
		hostileCase{name: "a payment nested past MaxDepth", body: callTool("get_full_history", hist, pay(nested(mcp.MaxDepth, "1"))), want: invalid("nests deeper")},
		hostileCase{name: "a payment beside a key", header: withKey(e.key), body: callTool("get_full_history", hist, pay(e.payments["amount"]))},
	)
}

// origins: Origin headers of other origins than the node's, near misses
// included.
func (cs *caseSet) origins(e matrixEnv) {
	ping := rpcBody("ping", "{}")
	port := e.host[strings.LastIndexByte(e.host, ':')+1:]
	for _, o := range []string{"null", "https://" + e.host, "http://127.0.0.1:1", "http://localhost:1", "http://" + e.host + "/",
		"http://" + e.host + "/mcp", "http://127.0.0.1.evil.example", "http://127.0.0.1.evil.example:" + port, "http://" + e.host + "@evil.example",
		"http://evil.example#http://" + e.host, "http://" + e.host + ".", "http://127.0.0.2:" + port, "file://", "http://" + e.host + "\u200b"} {
		cs.add(hostileCase{name: "Origin " + o, header: header("Origin", o), body: ping, want: forbidden()})
	}
	cs.add(
		hostileCase{name: "the node's Origin in capitals", header: header("Origin", "HTTP://"+e.host), body: ping, want: answered()},
		hostileCase{name: "the node's Origin under another loopback name", header: header("Origin", "http://localhost:"+port), body: ping, want: answered()},
		hostileCase{name: "an empty Origin", header: header("Origin", ""), body: ping, want: answered()},
		hostileCase{name: "a foreign Origin, then the node's", header: header("Origin", "https://evil.example", "Origin", "http://"+e.host), body: ping, want: forbidden()},
		hostileCase{name: "the node's Origin, then a foreign one", header: header("Origin", "http://"+e.host, "Origin", "https://evil.example"), body: ping},
		hostileCase{name: "a foreign Origin on GET", method: http.MethodGet, header: header("Origin", "https://evil.example"), want: refused(0, "", "")},
	)
}

// hosts: Host headers of other hosts than the node's, sent raw, and
// forwarding headers that must change nothing.
func (cs *caseSet) hosts(e matrixEnv) {
	port := e.host[strings.LastIndexByte(e.host, ':')+1:]
	body := string(rpcBody("ping", "{}"))
	post := func(target, hostLine string) string {
		return "POST " + target + " HTTP/1.1\r\n" + hostLine + "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	for _, h := range []string{"[::ffff:127.0.0.1]:" + port, "[0:0:0:0:0:ffff:7f00:1]:" + port, "127.0.0.2:" + port, "2130706433:" + port,
		"evil.example", "evil.example:" + port, "127.0.0.1.evil.example:" + port, ""} {
		cs.add(hostileCase{name: "Host " + jsonText(h), raw: post("/mcp", "Host: "+h+"\r\n"), want: forbidden()})
	}
	// The node's host name written otherwise: in capitals, under another
	// loopback name, with userinfo (no browser sends one), another port
	// or none (a Host is compared by name), a trailing dot. Answered or
	// refused, never another site's.
	for _, h := range []string{"LOCALHOST:" + port, "[::1]:" + port, "user@" + e.host, "user:pw@" + e.host, "127.0.0.1:1", "127.0.0.1",
		"127.0.0.1:0" + port, "127.0.0.1.:" + port, "localhost.:" + port} {
		cs.add(hostileCase{name: "Host " + jsonText(h), raw: post("/mcp", "Host: "+h+"\r\n")})
	}
	// A Host with a path or a port that is not one reaches no route.
	for _, h := range []string{e.host + ".evil.example", e.host + "/x", e.host + "/mcp?"} {
		cs.add(hostileCase{name: "Host " + jsonText(h), raw: post("/mcp", "Host: "+h+"\r\n"), want: refused(0, "", "")})
	}
	cs.add(
		hostileCase{name: "no Host, HTTP/1.1", raw: post("/mcp", ""), want: refused(400, "", ""), mayClose: true},
		hostileCase{name: "two Host headers", raw: post("/mcp", "Host: {host}\r\nHost: evil.example\r\n"), want: refused(400, "", ""), mayClose: true},
		hostileCase{name: "absolute-form for another host", raw: post("http://evil.example/mcp", "Host: {host}\r\n"), want: forbidden()},
		hostileCase{name: "absolute-form for the node, foreign Host", raw: post("http://{host}/mcp", "Host: evil.example\r\n")},
		hostileCase{name: "HTTP/1.0 without Host", raw: strings.Replace(post("/mcp", ""), "HTTP/1.1", "HTTP/1.0", 1), want: forbidden()},
	)
	for i, h := range []http.Header{header("X-Forwarded-Host", "evil.example"), header("Forwarded", "host=evil.example;for=1.2.3.4"),
		header("X-Forwarded-For", "1.2.3.4"), header("X-Forwarded-For", "garbage, , ::1%eth0"), header("X-Real-Ip", "10.0.0.1"),
		header("X-Forwarded-For", strings.Repeat("1.2.3.4, ", 800)), header("X-Forwarded-Proto", "https", "X-Forwarded-Port", "443"),
		header("True-Client-Ip", "10.0.0.1", "Cf-Connecting-Ip", "10.0.0.2", "X-Client-Ip", "10.0.0.3")} {
		cs.add(hostileCase{name: fmt.Sprintf("forwarding headers#%d", i), header: h, body: []byte(body), want: answered()})
	}
}

// credentials: API keys presented every way, malformed, twice and in
// conflict, on a premium call.
func (cs *caseSet) credentials(e matrixEnv) {
	hist := callTool("get_full_history", `{"agentPda":`+jsonText(e.agent)+`,"limit":1}`, "")
	unpaid := payErr("")
	if e.payments == nil {
		unpaid = expect{}
	}
	bad := "atst_" + strings.Repeat("z", 43)
	for _, c := range []struct {
		name string
		h    http.Header
		want expect
	}{
		{"Bearer", header("Authorization", "Bearer "+e.key), answered()},
		{"bearer in lower case", header("Authorization", "bearer "+e.key), answered()},
		{"Bearer and two spaces", header("Authorization", "Bearer  "+e.key), answered()},
		{"Bearer and a tab", header("Authorization", "Bearer\t"+e.key), refused(401, "UNAUTHORIZED", "Bearer")},
		{"Bearer alone", header("Authorization", "Bearer"), refused(401, "UNAUTHORIZED", "Bearer")},
		{"Bearer and spaces", header("Authorization", "Bearer    "), refused(401, "UNAUTHORIZED", "Bearer")},
		{"Basic", header("Authorization", "Basic Zm9vOmJhcg=="), refused(401, "UNAUTHORIZED", "Bearer")},
		{"Bearer with a second word", header("Authorization", "Bearer "+e.key+" extra"), toolErr("401")},
		{"Bearer in Cyrillic", header("Authorization", "Bearer ключ"), toolErr("401")},
		{"Bearer of 257 characters", header("Authorization", "Bearer "+strings.Repeat("k", mcp.MaxAPIKey+1)), refused(401, "UNAUTHORIZED", "longer")},
		{"a wrong key", withKey(bad), toolErr("401")},
		{"the key with spaces around", withKey(" " + e.key + " "), answered()},
		{"the same key both ways", header("Authorization", "Bearer "+e.key, "X-Api-Key", e.key), answered()},
		{"different keys both ways", header("Authorization", "Bearer "+e.key, "X-Api-Key", bad), invalid("different keys")},
		{"two Authorization headers, the key first", header("Authorization", "Bearer "+e.key, "Authorization", "Bearer "+bad), refused(0, "", "")},
		{"two Authorization headers, the key last", header("Authorization", "Bearer "+bad, "Authorization", "Bearer "+e.key), refused(0, "", "")},
		{"two X-API-Key headers, the key first", header("X-Api-Key", e.key, "X-Api-Key", bad), refused(0, "", "")},
		{"the key twice as X-API-Key", header("X-Api-Key", e.key, "X-Api-Key", e.key), expect{}},
		{"a session cookie, no key", header("Cookie", "attestd_session="+strings.Repeat("A", 43)), unpaid},
	} {
		cs.add(hostileCase{name: "credentials: " + c.name, header: c.h, body: hist, want: c.want})
	}
	for i, k := range []string{"a\x01b", e.key + "\x7f", "\x1b[31m" + e.key, e.key + "\tx"} {
		raw := "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"Connection: close\r\nX-API-Key: " + k + "\r\nContent-Length: " + strconv.Itoa(len(hist)) + "\r\n\r\n" + string(hist)
		cs.add(hostileCase{name: fmt.Sprintf("credentials: X-API-Key with control characters#%d", i), raw: raw, mayClose: true})
	}
}

// protocolHeaders: MCP-Protocol-Version unknown, long, or at odds with
// the body; the 2026-07-28 revision's own headers; a session id.
func (cs *caseSet) protocolHeaders(e matrixEnv) {
	ping := rpcBody("ping", "{}")
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}`
	next := func(method string, kv ...string) http.Header {
		return header(append([]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method}, kv...)...)
	}
	agent := `{"agentPda":` + jsonText(e.agent) + `}`
	for _, v := range []string{"1999-01-01", "2025-11-26", "2099-01-01", "zzz", strings.Repeat("9", 4096)} {
		cs.add(hostileCase{name: "MCP-Protocol-Version " + excerptOf(v, 24), header: header("Mcp-Protocol-Version", v), body: ping,
			want: misused()}) // the SDK's unsupported-version error, with the versions it speaks
	}
	cs.add(
		hostileCase{name: "MCP-Protocol-Version empty", header: header("Mcp-Protocol-Version", ""), body: ping, want: answered()},
		hostileCase{name: "no MCP-Protocol-Version", header: http.Header{"Mcp-Protocol-Version": nil}, body: ping, want: answered()},
		hostileCase{name: "MCP-Protocol-Version twice", header: header("Mcp-Protocol-Version", "2025-11-25", "Mcp-Protocol-Version", "2025-06-18"), body: ping},
		hostileCase{name: "revision 2026-07-28: tools/list", header: next("tools/list"), body: rpcBody("tools/list", `{"_meta":`+meta+`}`), want: answered()},
		hostileCase{name: "revision 2026-07-28: tools/call", header: next("tools/call", "Mcp-Name", "get_agent"),
			body: rpcBody("tools/call", `{"name":"get_agent","arguments":`+agent+`,"_meta":`+meta+`}`), want: answered()},
		hostileCase{name: "revision 2026-07-28: _meta of another revision", header: next("tools/list"),
			body: rpcBody("tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`), want: misused()},
		hostileCase{name: "revision 2026-07-28: no _meta", header: next("tools/list"), body: ping, want: misused()},
		hostileCase{name: "revision 2026-07-28: no Mcp-Method", header: header("Mcp-Protocol-Version", "2026-07-28"), body: ping, want: misused()},
		hostileCase{name: "revision 2026-07-28: Mcp-Method of another method", header: next("ping"), body: rpcBody("tools/list", `{"_meta":`+meta+`}`), want: misused()},
		hostileCase{name: "revision 2026-07-28: Mcp-Name of another tool", header: next("tools/call", "Mcp-Name", "get_stats"),
			body: rpcBody("tools/call", `{"name":"get_agent","arguments":`+agent+`,"_meta":`+meta+`}`), want: misused()},
		hostileCase{name: "revision 2026-07-28: an unknown method", header: next("no/such"), body: rpcBody("no/such", `{"_meta":`+meta+`}`), want: misused()},
		hostileCase{name: "revision 2026-07-28: subscriptions/listen", header: next("subscriptions/listen"),
			body: rpcBody("subscriptions/listen", `{"_meta":`+meta+`,"notifications":{}}`), want: rpcErr(-32601, "")},
		hostileCase{name: "revision 2026-07-28: server/discover", header: next("server/discover"), body: rpcBody("server/discover", `{"_meta":`+meta+`}`), want: answered()},
		hostileCase{name: "Mcp-Session-Id", header: header("Mcp-Session-Id", "abc"), body: ping, want: answered()},
		hostileCase{name: "Mcp-Session-Id of 4 KiB", header: header("Mcp-Session-Id", strings.Repeat("s", 4096)), body: ping, want: answered()},
		hostileCase{name: "Last-Event-ID", header: header("Last-Event-Id", "0_0"), body: ping, want: refused(400, "", "")},
	)
}

// mediaTypes: Content-Type, Accept and Content-Encoding variants, bombs
// (sent alone, their allocations measured) included.
func (cs *caseSet) mediaTypes(e matrixEnv) {
	ping := rpcBody("ping", "{}")
	for _, c := range []struct {
		name string
		h    http.Header
		body []byte
		want expect
	}{
		{"Content-Type with charset latin1", header("Content-Type", "application/json; charset=latin1"), ping, answered()},
		{"Content-Type in capitals", header("Content-Type", "APPLICATION/JSON"), ping, answered()},
		{"no Content-Type", http.Header{"Content-Type": nil}, ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Type multipart", header("Content-Type", "multipart/form-data; boundary=x"), ping, refused(0, "", "")},
		{"Content-Type text/plain", header("Content-Type", "text/plain"), ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Type form", header("Content-Type", "application/x-www-form-urlencoded"), ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Type malformed", header("Content-Type", "application/json;;="), ping, refused(0, "", "")},
		{"no Accept", http.Header{"Accept": nil}, ping, invalid("Accept")},
		{"Accept */*", header("Accept", "*/*"), ping, answered()},
		{"Accept of event streams only", header("Accept", "text/event-stream"), ping, invalid("Accept")},
		{"Accept of JSON only", header("Accept", "application/json"), ping, invalid("Accept")},
		{"Content-Encoding gzip", header("Content-Encoding", "gzip"), testenv.Gzip(ping), answered()},
		{"Content-Encoding identity", header("Content-Encoding", "identity"), ping, answered()},
		{"Content-Encoding gzip, not gzip", header("Content-Encoding", "gzip"), ping, invalid("Content-Encoding")},
		{"Content-Encoding deflate, not deflate", header("Content-Encoding", "deflate"), []byte("junk"), invalid("Content-Encoding")},
		{"Content-Encoding bogus", header("Content-Encoding", "bogus"), ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Encoding br", header("Content-Encoding", "br"), ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Encoding gzip twice", header("Content-Encoding", "gzip, gzip"), testenv.Gzip(testenv.Gzip(ping)), refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
		{"Content-Encoding of 100 codings", header("Content-Encoding", strings.Repeat("identity,", 100)), ping, refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
	} {
		cs.add(hostileCase{name: c.name, header: c.h, body: c.body, want: c.want})
	}
	// A bomb is refused before it is decoded past the bound: a request
	// may allocate a few bounds' worth, not the bomb's size.
	const maxAlloc = 8 << 20
	cs.add(
		hostileCase{name: "a gzip bomb of 16 MiB", header: header("Content-Encoding", "gzip"), body: testenv.Gzip(make([]byte, 16<<20)),
			maxAlloc: maxAlloc, want: tooLarge()},
		hostileCase{name: "a double gzip bomb of 32 MiB", header: header("Content-Encoding", "gzip, gzip"),
			body: testenv.Gzip(testenv.Gzip(make([]byte, 32<<20))), maxAlloc: maxAlloc, want: refused(415, "UNSUPPORTED_MEDIA_TYPE", "")},
	)
}

// httpMethods: every other method than POST, real and made up.
func (cs *caseSet) httpMethods(e matrixEnv) {
	for _, m := range []string{"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "FOO", "get", "M-SEARCH"} {
		cs.add(hostileCase{name: "method " + m, method: m, body: rpcBody("ping", "{}"), want: refused(405, "METHOD_NOT_ALLOWED", "")})
	}
	cs.add(
		hostileCase{name: "DELETE with a session id", method: "DELETE", header: header("Mcp-Session-Id", "abc"), want: refused(405, "METHOD_NOT_ALLOWED", "")},
		hostileCase{name: "GET of the event stream", method: "GET", header: header("Accept", "text/event-stream"), want: refused(405, "METHOD_NOT_ALLOWED", "")},
		hostileCase{name: "CONNECT", raw: "CONNECT {host} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n", want: refused(0, "", ""), mayClose: true},
	)
}

// toolText is the text of a tool result's content.
func toolText(m *rpcMessage) string {
	var parts []string
	for _, c := range m.Result.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// summary counts the matrix's requests and their statuses.
func summary(n int, statuses map[int]int) string {
	codes := make([]int, 0, len(statuses))
	for s := range statuses {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests; statuses:", n)
	for _, s := range codes {
		fmt.Fprintf(&b, " %d×%d", s, statuses[s])
	}
	return b.String()
}

// excerptOf is s cut to n bytes, saying how long it was.
func excerptOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
}

// FuzzRemoteRequest posts fuzzed bodies under a fuzzed MCP-Protocol-Version
// to /mcp on a node (seeded with the matrix's bodies): every answer comes
// in time, is no 5xx, tells nothing internal, and is the error envelope or
// a JSON-RPC error for a non-2xx, a JSON-RPC response for a 200, empty
// for a 202.
func FuzzRemoteRequest(f *testing.F) {
	tg, env := fuzzTarget(f)
	for _, c := range hostileCases(env) {
		if c.raw == "" && !c.chunked && c.header == nil && c.body != nil && len(c.body) <= 8<<10 {
			f.Add(c.body, "2025-11-25")
		}
	}
	for _, v := range []string{"", "2024-11-05", "2025-03-26", "2026-07-28"} {
		f.Add(rpcBody("tools/list", "{}"), v)
	}
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		for _, r := range version {
			if r < ' ' && r != '\t' || r == 0x7f {
				t.Skip("not a header value")
			}
		}
		c := hostileCase{name: "fuzzed", body: body, header: header("Mcp-Protocol-Version", version)}
		o := tg.send(c)
		if why := tg.broken(c, o, false); len(why) > 0 {
			t.Fatalf("%s\n\trequest (revision %q): %q\n\tanswer %d %q: %s", strings.Join(why, "; "), version, body,
				o.status, o.header.Get("Content-Type"), excerptOf(string(o.body), 300))
		}
	})
}

// fuzzTarget starts a node with the remote endpoint over a seeded
// database, without premium routes.
func fuzzTarget(tb testing.TB) (*hostileTarget, matrixEnv) {
	env := apptest.NewEnv(tb, apptest.Options{Agents: 2, Attestations: 10})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(tb, err, "listen")
	origin, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(tb, err, "origin")
	env.StartNode(tb, apptest.NodeOptions{Listener: ln, Routes: func(api *app.API) {
		r, err := ratelimit.NewIPResolver(nil, "")
		testenv.Must(tb, err, "resolver")
		rem, err := mcp.NewRemote(mcp.RemoteConfig{Origin: origin, API: &inprocess.Transport{Handler: api.InProcess()},
			ClientIP: r.ClientIP, Logger: apptest.Logger()})
		testenv.Must(tb, err, "remote endpoint")
		api.Page(fiber.MethodPost, mcp.Path, rem.Handler())
	}})
	tg := newTarget(tb, origin.URL(mcp.Path), env)
	agents := env.Seeded.Agents
	me := matrixEnv{host: tg.host, agent: agents[0].PDA.String(), other: agents[1].PDA.String(), pda: unknownPDA,
		ids: []string{unknownPDA}, tools: toolProperties(tb, tg)}
	return tg, me
}

// toolProperties reads each tool's arguments and their JSON types from
// tools/list.
func toolProperties(tb testing.TB, tg *hostileTarget) map[string]map[string]string {
	tb.Helper()
	o := tg.send(hostileCase{body: rpcBody("tools/list", "{}")})
	var ping struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]struct {
						Type string `json:"type"`
					} `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if o.err != nil || o.status != 200 || json.Unmarshal(o.body, &ping) != nil || len(ping.Result.Tools) != len(mcp.ToolNames()) {
		tb.Fatalf("tools/list: %v %d %.300s", o.err, o.status, o.body)
	}
	props := map[string]map[string]string{}
	for _, tl := range ping.Result.Tools {
		props[tl.Name] = map[string]string{}
		for p, s := range tl.InputSchema.Properties {
			props[tl.Name][p] = s.Type
		}
	}
	return props
}
