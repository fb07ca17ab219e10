package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/gowebpki/jcs"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// mountRemote serves the remote MCP endpoint on api for origin, as
// `attestd serve` does; clientIP nil: the connection's address.
func mountRemote(t *testing.T, api *app.API, origin config.Origin, clientIP func(*fiber.Ctx) netip.Addr) {
	t.Helper()
	mountRemoteReg(t, api, origin, clientIP, nil)
}

// mountRemoteReg is mountRemote with the endpoint's metrics in reg.
func mountRemoteReg(t *testing.T, api *app.API, origin config.Origin, clientIP func(*fiber.Ctx) netip.Addr, reg prometheus.Registerer) {
	t.Helper()
	if clientIP == nil {
		r, err := ratelimit.NewIPResolver(nil, "")
		testenv.Must(t, err, "resolver")
		clientIP = r.ClientIP
	}
	r, err := mcp.NewRemote(mcp.RemoteConfig{Origin: origin, API: &inprocess.Transport{Handler: api.InProcess()},
		ClientIP: clientIP, Logger: apptest.Logger(), Registerer: reg})
	testenv.Must(t, err, "remote endpoint")
	api.Page(fiber.MethodPost, mcp.Path, r.Handler())
}

// remoteNode starts a node over the fixture's data (keys, premium routes)
// with the remote endpoint, limited to limit requests a minute per client
// address (0: no limit); it returns the node and the endpoint's URL.
func (f *fixture) remoteNode(t *testing.T, limit int) (*apptest.Node, string) {
	t.Helper()
	return f.remoteNodeReg(t, limit, nil)
}

// remoteNodeReg is remoteNode with the endpoint's metrics in reg.
func (f *fixture) remoteNodeReg(t *testing.T, limit int, reg prometheus.Registerer) (*apptest.Node, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	origin, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(t, err, "origin")
	var mw fiber.Handler
	var clientIP func(*fiber.Ctx) netip.Addr
	if limit > 0 {
		l := f.env.NewLimiter(t, limit)
		mw, clientIP = l.Middleware(), l.Resolver().ClientIP
	}
	node := f.startNodeWith(t, mw, func(api *app.API) { mountRemoteReg(t, api, origin, clientIP, reg) }, ln)
	return node, origin.URL(mcp.Path)
}

// callerClient is an HTTP client whose connections leave from address
// from (a loopback address: 127.0.0.0/8 is all the machine's) and whose
// requests carry header.
func callerClient(from string, header http.Header) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return &http.Client{Timeout: 30 * time.Second, Transport: headerTransport{header: header,
		next: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}}
}

type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header[k] = vs
	}
	return h.next.RoundTrip(r)
}

// connectRemote connects the official Go SDK client to endpoint over hc.
func connectRemote(t *testing.T, endpoint string, hc *http.Client) *mcpsdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "remote-test", Version: "v0"}, nil).Connect(ctx,
		&mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	testenv.Must(t, err, "connect to %s", endpoint)
	t.Cleanup(func() { cs.Close() })
	return cs
}

var checkedAt = regexp.MustCompile(`"checkedAt":"[^"]*"`)

// structuredJSON is a tool result's structured content as canonical JSON.
func structuredJSON(t *testing.T, res *mcpsdk.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	testenv.Must(t, err, "marshal")
	c, err := jcs.Transform(b)
	testenv.Must(t, err, "canonical")
	// When an answer was made (bulk_verify's checkedAt) is not what it says.
	return checkedAt.ReplaceAllString(string(c), `"checkedAt":"-"`)
}

// TestRemoteAnswersAsTheAPI calls every tool over a node's /mcp with the
// official Go SDK client (which lists the tools first) and compares each
// answer with the same tool of `attestd mcp`, the REST API's client, on
// the same node: the same structured answers, the premium ones with the
// caller's own API key, sent either way.
func TestRemoteAnswersAsTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30)
	node, endpoint := f.remoteNode(t, 0)
	local := connect(t, mcp.Config{APIURL: node.Root, APIKey: f.key})
	for _, how := range []struct {
		name   string
		header http.Header
	}{
		{"bearer", http.Header{"Authorization": {"Bearer " + f.key}}},
		{"x-api-key", http.Header{"X-Api-Key": {f.key}}},
	} {
		t.Run(how.name, func(t *testing.T) {
			cs := connectRemote(t, endpoint, callerClient("127.0.0.1", how.header))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tools, err := cs.ListTools(ctx, nil)
			testenv.Must(t, err, "list tools")
			if len(tools.Tools) != len(mcp.ToolNames()) {
				t.Fatalf("%d tools listed, want %d", len(tools.Tools), len(mcp.ToolNames()))
			}
			for _, tl := range tools.Tools {
				if tl.OutputSchema == nil {
					t.Errorf("%s lists no output schema", tl.Name)
				}
			}
			calls := []struct {
				tool string
				args map[string]any
			}{
				{mcp.ToolListAttestations, map[string]any{"agentPda": f.agent, "limit": 5}},
				{mcp.ToolGetAttestation, map[string]any{"pda": f.textPDA}},
				{mcp.ToolGetAgent, map[string]any{"agentPda": f.agent}},
				{mcp.ToolGetAgentStats, map[string]any{"agentPda": f.agent}},
				{mcp.ToolVerifyActionHash, map[string]any{"payload": textPayload, "attestationPda": f.textPDA}},
				{mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent, "limit": 3}},
				{mcp.ToolBulkVerify, map[string]any{"ids": []string{f.jsonPDA, f.textPDA, f.forgedPDA}}},
			}
			for _, c := range calls {
				remote, want := structuredJSON(t, call(t, cs, c.tool, c.args)), structuredJSON(t, call(t, local, c.tool, c.args))
				if remote != want {
					t.Errorf("%s over /mcp:\n%.600s\nover the REST client:\n%.600s", c.tool, remote, want)
				}
			}
			var st mcp.StatsOutput
			structured(t, call(t, cs, mcp.ToolGetStats, map[string]any{}), &st)
			if st.Stats.Attestations == 0 || st.Health == nil || st.Health.Status == "" {
				t.Errorf("get_stats: %+v", st)
			}
			var rep mcp.ForensicOutput
			structured(t, call(t, cs, mcp.ToolGetForensicReport, map[string]any{"agentPda": f.agent}), &rep)
			if !rep.ReportHashVerified || rep.Report.Agent.PDA != f.agent {
				t.Errorf("get_forensic_report: verified %v, agent %s", rep.ReportHashVerified, rep.Report.Agent.PDA)
			}
		})
	}
	t.Run("revoked key", func(t *testing.T) {
		cs := connectRemote(t, endpoint, callerClient("127.0.0.1", http.Header{"Authorization": {"Bearer " + f.revoked}}))
		res := call(t, cs, mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent})
		if !res.IsError || !strings.Contains(text(res), "401") || !strings.Contains(text(res), "Authorization: Bearer") {
			t.Fatalf("a revoked key: %s", text(res))
		}
		// The public tools do not need a key: a bad one changes nothing.
		structured(t, call(t, cs, mcp.ToolGetAgent, map[string]any{"agentPda": f.agent}), &client.Agent{})
	})
	t.Run("no key, no payments on the node", func(t *testing.T) {
		cs := connectRemote(t, endpoint, callerClient("127.0.0.1", nil))
		res := call(t, cs, mcp.ToolBulkVerify, map[string]any{"ids": []string{f.textPDA}})
		if !res.IsError || !strings.Contains(text(res), "401") {
			t.Fatalf("a premium call without key or payment: %s", text(res))
		}
	})
}

// TestRemoteEachCallerItsOwnLimit: each MCP request counts once against
// its caller's address, whatever the tool reads inside; a caller over
// its limit gets 429 and the others nothing of it.
func TestRemoteEachCallerItsOwnLimit(t *testing.T) {
	t.Parallel()
	const limit = 6
	f := newFixture(t, 10)
	reg := prometheus.NewRegistry()
	_, endpoint := f.remoteNodeReg(t, limit, reg)
	// get_attestation reads the attestation, its proof, the log's key and
	// checkpoint: several API reads, one request.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_attestation","arguments":{"pda":"` + f.textPDA + `"}}}`
	flood := mcpPoster{url: endpoint, hc: callerClient("127.0.0.2", nil), header: http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}}
	for i := range limit {
		res, b := flood.exchange(t, http.MethodPost, body)
		if res.StatusCode != http.StatusOK || res.Header.Get("Ratelimit-Remaining") != strconv.Itoa(limit-1-i) {
			t.Fatalf("call %d: %d, remaining %q: %.300s", i+1, res.StatusCode, res.Header.Get("Ratelimit-Remaining"), b)
		}
		var r rpcResult
		testenv.Must(t, json.Unmarshal([]byte(b), &r), "decode")
		if r.Result == nil || r.Result.IsError {
			t.Fatalf("call %d: %.300s", i+1, b)
		}
	}
	res, b := flood.exchange(t, http.MethodPost, body)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(b, "RATE_LIMITED") {
		t.Fatalf("over the limit: %d %v %.300s", res.StatusCode, res.Header, b)
	}
	// Another address: its own limit, whole.
	other := mcpPoster{url: endpoint, hc: callerClient("127.0.0.3", nil), header: flood.header}
	if res, b := other.exchange(t, http.MethodPost, body); res.StatusCode != http.StatusOK || res.Header.Get("Ratelimit-Remaining") != strconv.Itoa(limit-1) {
		t.Fatalf("another caller: %d, remaining %q: %.300s", res.StatusCode, res.Header.Get("Ratelimit-Remaining"), b)
	}
	// The refused call never reached the endpoint: seven calls counted.
	if n := testenv.MetricSum(t, reg, "attestd_mcp_tool_calls_total", "tool", mcp.ToolGetAttestation, "outcome", "ok"); n != limit+1 {
		t.Errorf("attestd_mcp_tool_calls_total{get_attestation,ok} = %v, want %d", n, limit+1)
	}
	if n := testenv.MetricSum(t, reg, "attestd_mcp_requests_total", "method", "tools/call"); n != limit+1 {
		t.Errorf("attestd_mcp_requests_total{tools/call} = %v, want %d", n, limit+1)
	}
}

// TestRemoteRefusals: what the endpoint refuses, before the SDK or by it,
// in the API's error envelope (HTTP-level) or as JSON-RPC errors.
func TestRemoteRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5)
	_, endpoint := f.remoteNode(t, 0)
	u, err := url.Parse(endpoint)
	testenv.Must(t, err, "endpoint")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_agent","arguments":{"agentPda":"x"},"_meta":` +
		strings.Repeat(`{"a":`, mcp.MaxDepth) + `1` + strings.Repeat(`}`, mcp.MaxDepth) + `}}`
	tests := []struct {
		name    string
		method  string
		header  http.Header
		body    string
		status  int
		code    string // the envelope's code, or "rpc:N" for a JSON-RPC error N
		message string
	}{
		{"a foreign Origin", http.MethodPost, http.Header{"Origin": {"https://evil.example"}}, list, 403, "FORBIDDEN", "origin"},
		{"the null Origin", http.MethodPost, http.Header{"Origin": {"null"}}, list, 403, "FORBIDDEN", "origin"},
		{"the same origin", http.MethodPost, http.Header{"Origin": {"http://" + u.Host}}, list, 200, "", ""},
		{"the same loopback origin by name", http.MethodPost, http.Header{"Origin": {"http://localhost:" + u.Port()}}, list, 200, "", ""},
		{"another loopback port", http.MethodPost, http.Header{"Origin": {"http://localhost:1"}}, list, 403, "FORBIDDEN", "origin"},
		{"https for http", http.MethodPost, http.Header{"Origin": {"https://" + u.Host}}, list, 403, "FORBIDDEN", "origin"},
		{"GET", http.MethodGet, nil, "", 405, "METHOD_NOT_ALLOWED", "POST"},
		{"DELETE", http.MethodDelete, nil, "", 405, "METHOD_NOT_ALLOWED", "POST"},
		{"a batch", http.MethodPost, nil, "[" + list + "," + list + "]", 400, "INVALID_PARAM", "batches"},
		{"nested too deep", http.MethodPost, nil, deep, 400, "INVALID_PARAM", "nests deeper"},
		{"over the body bound", http.MethodPost, nil, `{"x":"` + strings.Repeat("a", mcp.MaxRemoteBody) + `"}`, 413, "PAYLOAD_TOO_LARGE", "at most"},
		{"a bad Authorization", http.MethodPost, http.Header{"Authorization": {"Basic Zm9vOmJhcg=="}}, list, 401, "UNAUTHORIZED", "Bearer"},
		{"two different keys", http.MethodPost, http.Header{"Authorization": {"Bearer a"}, "X-Api-Key": {"b"}}, list, 400, "INVALID_PARAM", "different keys"},
		{"an oversized key", http.MethodPost, http.Header{"X-Api-Key": {strings.Repeat("k", mcp.MaxAPIKey+1)}}, list, 401, "UNAUTHORIZED", "longer"},
		{"a wrong Content-Type", http.MethodPost, http.Header{"Content-Type": {"text/plain"}}, list, 415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type"},
		{"not JSON", http.MethodPost, nil, `{"jsonrpc":`, 400, "", ""},
		{"prompts/list", http.MethodPost, nil, `{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{}}`, 200, "rpc:-32601", "prompts/list"},
		{"resources/read", http.MethodPost, nil, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`, 200, "rpc:-32601", "resources/read"},
		{"completion/complete", http.MethodPost, nil, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`, 200, "rpc:-32601", "completion/complete"},
		{"an unknown method", http.MethodPost, nil, `{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}`, 400, "INVALID_PARAM", "no/such"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}
			for k, v := range tt.header {
				h[k] = v
			}
			p := mcpPoster{url: endpoint, header: h}
			res, b := p.exchange(t, tt.method, tt.body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", res.StatusCode, tt.status, b)
			}
			switch {
			case strings.HasPrefix(tt.code, "rpc:"):
				var r struct {
					Error *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				testenv.Must(t, json.Unmarshal([]byte(b), &r), "decode %.300s", b)
				if r.Error == nil || strconv.Itoa(r.Error.Code) != tt.code[4:] || !strings.Contains(r.Error.Message, tt.message) {
					t.Fatalf("want JSON-RPC error %s %q: %.300s", tt.code[4:], tt.message, b)
				}
			case tt.code != "":
				var e struct {
					Error struct{ Code, Message string } `json:"error"`
				}
				testenv.Must(t, json.Unmarshal([]byte(b), &e), "decode %.300s", b)
				if e.Error.Code != tt.code || !strings.Contains(e.Error.Message, tt.message) {
					t.Fatalf("want %s %q: %.300s", tt.code, tt.message, b)
				}
			}
		})
	}
	t.Run("a foreign Host", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(list))
		testenv.Must(t, err, "request")
		req.Host = "rebound.attacker.example:" + u.Port()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "post")
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "DNS rebinding") {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
	})
}
