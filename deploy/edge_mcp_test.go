package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/datasetfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// mcpList is a JSON-RPC request for the tool list.
const mcpList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// mcpDays are the days of the dataset the nodes serve (list_datasets).
var mcpDays = []string{"2026-11-25", "2026-11-26", "2026-11-27"}

// mcpFleet is the edge fleet with the remote MCP endpoint on both nodes,
// wired as `attestd serve` wires it: the tools read the node's own API in
// process, each caller is its address as the node's rate limiter resolves
// it (the production default, 100 requests a minute, trusting nginx alone
// for X-Forwarded-For), and Host and Origin must be nginx's origin, the
// one clients use. The nodes start before nginx, whose port they cannot
// know yet: each builds its endpoint at its first /mcp request.
type mcpFleet struct {
	*fleet
	limiter *ratelimit.Limiter
	origin  atomic.Pointer[config.Origin]

	mu   sync.Mutex
	reqs []mcpRequest // every POST /mcp, as a node received it
}

// mcpRequest is what a node saw of one POST /mcp.
type mcpRequest struct {
	node          int
	host, version string // Host and MCP-Protocol-Version
	method        string // the JSON-RPC method
	bearer, xKey  bool   // Authorization: Bearer, X-API-Key
}

// newMCPFleet starts the fleet: the nodes with the premium routes (and
// the fleet's key), a dataset of mcpDays (list_datasets) and /mcp.
func newMCPFleet(t *testing.T) *mcpFleet {
	t.Helper()
	m := &mcpFleet{}
	bucket, _ := datasetfixture.Write(t, dataset.Pending{Day: "2026-11-28", Code: dataset.PendingDayOpen, Reason: "the day is not over in the log"},
		mcpDays...)
	datasets := dataset.NewServer(dataset.ServerDeps{Bucket: bucket, Logger: apptest.Logger()})
	nodes := 0
	m.fleet = newFleet(t, fleetOptions{policy: long, keyed: true,
		middleware: func(env *apptest.Env) []fiber.Handler {
			m.limiter = trustingLimiter(t, env, ratelimit.DefaultLimit)
			return []fiber.Handler{m.limiter.Middleware()}
		},
		unlimited: func(_ *testing.T, _ *apptest.Env, d *app.Deps) func(*app.API) {
			d.Unlimited = append(d.Unlimited, datasets.Routes()...)
			return nil
		},
		routes: func(t *testing.T, _ *apptest.Env, api *app.API, deps app.Deps) {
			m.mount(api, nodes, deps.Registerer)
			nodes++
		},
	})
	origin, err := config.ParseOrigin(m.edge.URL)
	testenv.Must(t, err, "nginx's origin")
	m.origin.Store(&origin)
	return m
}

// trustingLimiter is the nodes' per-IP limit of limit requests a minute,
// trusting the edge (127.0.0.1) alone for X-Forwarded-For, as
// ATTESTD_TRUSTED_PROXIES would.
func trustingLimiter(t *testing.T, env *apptest.Env, limit int) *ratelimit.Limiter {
	o, err := redis.ParseURL(env.RedisURL)
	testenv.Must(t, err, "redis url")
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	l, err := ratelimit.New(rdb, ratelimit.Config{Limit: limit, Window: time.Minute, KeyPrefix: env.Prefix + "rl:",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Timeout: 3 * time.Second},
		prometheus.NewRegistry(), nil)
	testenv.Must(t, err, "limiter")
	t.Cleanup(l.Close)
	return l
}

// mount serves POST /mcp on node number node, its metrics in reg,
// recording each request.
func (m *mcpFleet) mount(api *app.API, node int, reg prometheus.Registerer) {
	remote := sync.OnceValues(func() (fiber.Handler, error) {
		origin := m.origin.Load()
		if origin == nil {
			return nil, fmt.Errorf("an MCP request before nginx listened")
		}
		r, err := mcp.NewRemote(mcp.RemoteConfig{Origin: *origin, API: &inprocess.Transport{Handler: api.InProcess()},
			ClientIP: m.limiter.Resolver().ClientIP, Logger: apptest.Logger(), Registerer: reg})
		if err != nil {
			return nil, err
		}
		return r.Handler(), nil
	})
	api.Page(fiber.MethodPost, mcp.Path, func(c *fiber.Ctx) error {
		var rpc struct{ Method string }
		_ = json.Unmarshal(c.Body(), &rpc)
		m.mu.Lock()
		m.reqs = append(m.reqs, mcpRequest{node: node, host: string(c.Request().Host()), version: c.Get("Mcp-Protocol-Version"),
			method: rpc.Method, bearer: c.Get(fiber.HeaderAuthorization) != "", xKey: c.Get("X-Api-Key") != ""})
		m.mu.Unlock()
		h, err := remote()
		if err != nil {
			return err
		}
		return h(c)
	})
}

// nodeMetric is the counter name (with labels) on each node.
func (m *mcpFleet) nodeMetric(t *testing.T, name string, labels ...string) []int {
	t.Helper()
	var out []int
	for _, n := range m.nodes {
		out = append(out, int(testenv.MetricSum(t, n.Reg, name, labels...)))
	}
	return out
}

// requests are the recorded requests that match.
func (m *mcpFleet) requests(match func(mcpRequest) bool) []mcpRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []mcpRequest
	for _, r := range m.reqs {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// post sends one JSON-RPC message to /mcp through nginx, from c.
func (m *mcpFleet) post(c *http.Client, header map[string]string, body string) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, m.edge.URL+mcp.Path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if h, ok := header["Host"]; ok {
		req.Host = h
	}
	res, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: b, raw: len(b)}, err
}

// fromAddr is an HTTP client whose connections leave from ip (a loopback
// address: 127.0.0.0/8 is all the machine's).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 2}}
}

// toolCall is one call of a tool, with what its structured answer must
// show.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	want      func(toolAnswer) bool
}

// toolAnswer holds the fields of the tools' structured answers that the
// checks read (each tool fills some).
type toolAnswer struct {
	Stats *struct{ Agents, Attestations int64 } `json:"stats"`
	Data  []struct {
		ID, PDA, AgentPDA string
	} `json:"data"`
	PDA                string `json:"pda"`
	AgentPDA           string `json:"agentPda"`
	ActionHash         string `json:"actionHash"`
	TotalAttestations  int64  `json:"totalAttestations"`
	Result             string `json:"result"`
	TotalDays          int    `json:"totalDays"`
	Days               []struct{ Day string }
	Agent              *struct{ PDA string } `json:"agent"`
	Report             *struct{ Agent struct{ PDA string } }
	ReportHashVerified bool `json:"reportHashVerified"`
	Summary            *struct{ Total, NotFound int }
}

// toolCalls are a call of every tool over the fleet's seeded data.
func (m *mcpFleet) toolCalls() []toolCall {
	agent, s := m.env.Seeded.Agents[0].PDA.String(), m.env.Seeded.Samples
	var ids []string
	for _, x := range s {
		ids = append(ids, x.PDA)
	}
	ofAgent := func(a toolAnswer) bool {
		return !slices.ContainsFunc(a.Data, func(d struct{ ID, PDA, AgentPDA string }) bool { return d.AgentPDA != agent })
	}
	return []toolCall{
		{mcp.ToolGetStats, map[string]any{}, func(a toolAnswer) bool {
			return a.Stats != nil && a.Stats.Agents == 3 && a.Stats.Attestations == int64(m.env.Seeded.Attestations)
		}},
		{mcp.ToolListAttestations, map[string]any{"agentPda": agent, "limit": 5}, func(a toolAnswer) bool { return len(a.Data) == 5 && ofAgent(a) }},
		{mcp.ToolGetAttestation, map[string]any{"pda": s[0].PDA}, func(a toolAnswer) bool { return a.PDA == s[0].PDA && a.ActionHash == s[0].ActionHash }},
		{mcp.ToolGetAgent, map[string]any{"agentPda": agent}, func(a toolAnswer) bool { return a.PDA == agent }},
		{mcp.ToolGetAgentStats, map[string]any{"agentPda": agent}, func(a toolAnswer) bool { return a.AgentPDA == agent && a.TotalAttestations > 0 }},
		{mcp.ToolVerifyActionHash, map[string]any{"payload": s[0].Payload, "attestationPda": s[0].PDA}, func(a toolAnswer) bool { return a.Result == mcp.Verified }},
		{mcp.ToolListDatasets, map[string]any{}, func(a toolAnswer) bool {
			return a.TotalDays == len(mcpDays) && len(a.Days) == len(mcpDays) && a.Days[0].Day == mcpDays[0]
		}},
		{mcp.ToolGetFullHistory, map[string]any{"agentPda": agent, "limit": 3}, func(a toolAnswer) bool {
			return len(a.Data) == 3 && ofAgent(a) && a.Agent != nil && a.Agent.PDA == agent
		}},
		{mcp.ToolGetForensicReport, map[string]any{"agentPda": agent}, func(a toolAnswer) bool {
			return a.ReportHashVerified && a.Report != nil && a.Report.Agent.PDA == agent
		}},
		{mcp.ToolBulkVerify, map[string]any{"ids": ids}, func(a toolAnswer) bool {
			return a.Summary != nil && a.Summary.Total == len(ids) && a.Summary.NotFound == 0 && len(a.Data) == len(ids)
		}},
	}
}

// clientLine is one line a script of testdata/mcpclients printed.
type clientLine struct {
	Client, Step    string
	ProtocolVersion string `json:"protocolVersion"`
	Era             string `json:"era"`
	Server          *struct{ Name, Version string }
	Tools           []struct {
		Name         string `json:"name"`
		OutputSchema bool   `json:"outputSchema"`
	}
	Tool              string          `json:"tool"`
	Threw             *string         `json:"threw"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Text              string          `json:"text"`
}

// runClient runs script (testdata/mcpclients, installed in modules)
// against the fleet's /mcp through nginx, sending header with every
// request, and returns what it printed.
func (m *mcpFleet) runClient(t *testing.T, modules, script string, header map[string]string, calls []toolCall) []clientLine {
	t.Helper()
	dir := t.TempDir()
	testenv.Must(t, os.Symlink(modules, filepath.Join(dir, "node_modules")), "link node_modules")
	for _, f := range []string{"calls.mjs", script} {
		b, err := os.ReadFile(filepath.Join("testdata", "mcpclients", f))
		testenv.Must(t, err, "read %s", f)
		testenv.Must(t, os.WriteFile(filepath.Join(dir, f), b, 0o644), "copy %s", f)
	}
	plan, err := json.Marshal(map[string]any{"url": m.edge.URL + mcp.Path, "headers": header, "calls": calls})
	testenv.Must(t, err, "plan")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, string(plan))
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testenv.Must(t, cmd.Run(), "node %s: %s", script, stderr.String())
	var lines []clientLine
	for _, l := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		var c clientLine
		testenv.Must(t, json.Unmarshal(l, &c), "%s printed %s", script, l)
		lines = append(lines, c)
	}
	return lines
}

// checkClientRun checks what a client printed: connected, all ten tools
// listed with output schemas, then each call answered as calls want.
func checkClientRun(t *testing.T, name string, lines []clientLine, calls []toolCall) clientLine {
	t.Helper()
	if len(lines) != 2+len(calls) || lines[0].Step != "connected" || lines[1].Step != "tools" {
		t.Fatalf("%s printed %d lines: %+v", name, len(lines), lines)
	}
	var listed []string
	for _, tl := range lines[1].Tools {
		if !tl.OutputSchema {
			t.Errorf("%s: %s listed without an output schema", name, tl.Name)
		}
		listed = append(listed, tl.Name)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, slices.Sorted(slices.Values(mcp.ToolNames()))) {
		t.Errorf("%s listed %v", name, listed)
	}
	for i, c := range calls {
		l := lines[2+i]
		var a toolAnswer
		switch {
		case l.Tool != c.Name:
			t.Errorf("%s: call %d is %s, want %s", name, i, l.Tool, c.Name)
		case l.Threw != nil:
			t.Errorf("%s: the SDK threw on %s: %s", name, c.Name, *l.Threw)
		case l.IsError || len(l.StructuredContent) == 0 || string(l.StructuredContent) == "null":
			t.Errorf("%s: %s: isError %v, structuredContent %s: %.300s", name, c.Name, l.IsError, l.StructuredContent, l.Text)
		case json.Unmarshal(l.StructuredContent, &a) != nil || !c.want(a):
			t.Errorf("%s: %s answered %.600s", name, c.Name, l.StructuredContent)
		}
	}
	return lines[0]
}

// TestEdgeMCPOfficialClients: through nginx, the official TypeScript MCP
// clients call every tool of the two nodes' /mcp, requests taken by
// either node in turn (no session: any node answers any request): v2
// pinned to protocol revision 2026-07-28 (server/discover, no initialize;
// the key as Authorization: Bearer), v1 on 2025-11-25 (initialize; the key
// as X-API-Key). Every answer is structured and right. The nodes see the
// Host clients used, port included, and refuse a foreign Origin or Host.
func TestEdgeMCPOfficialClients(t *testing.T) {
	t.Parallel()
	m := newMCPFleet(t)
	modules := testenv.NodeModules(t, filepath.Join("testdata", "mcpclients"))
	calls := m.toolCalls()

	v2 := checkClientRun(t, "v2", m.runClient(t, modules, "v2.mjs", map[string]string{"Authorization": "Bearer " + m.key}, calls), calls)
	if v2.ProtocolVersion != "2026-07-28" || v2.Era != "modern" || v2.Server == nil || v2.Server.Name == "" {
		t.Errorf("v2 negotiated %q (era %q) with %+v", v2.ProtocolVersion, v2.Era, v2.Server)
	}
	v1 := checkClientRun(t, "v1", m.runClient(t, modules, "v1.mjs", map[string]string{"X-API-Key": m.key}, calls), calls)
	if v1.ProtocolVersion != "2025-11-25" || v1.Server == nil || v1.Server.Name == "" {
		t.Errorf("v1 negotiated %q with %+v", v1.ProtocolVersion, v1.Server)
	}
	// What the nodes received from each client.
	for _, c := range []struct {
		name      string
		key       func(mcpRequest) bool
		version   string
		handshake string
	}{
		{"v2", func(r mcpRequest) bool { return r.bearer && !r.xKey }, "2026-07-28", "server/discover"},
		{"v1", func(r mcpRequest) bool { return r.xKey && !r.bearer }, "2025-11-25", "initialize"},
	} {
		reqs := m.requests(c.key)
		var nodes [2]int
		var methods []string
		called := 0
		for _, r := range reqs {
			nodes[r.node]++
			methods = append(methods, r.method)
			if r.method == "tools/call" {
				called++
			}
			// nginx passes the public host's name ($host, as on every route).
			if name, _, _ := net.SplitHostPort(m.origin.Load().Host); r.host != name {
				t.Errorf("%s: a node saw Host %q, not nginx's %q", c.name, r.host, name)
			}
			if r.version != c.version && r.method != "initialize" {
				t.Errorf("%s: %s with MCP-Protocol-Version %q", c.name, r.method, r.version)
			}
		}
		if called != len(calls) || !slices.Contains(methods, c.handshake) || slices.Contains(methods, "initialize") != (c.handshake == "initialize") {
			t.Errorf("%s: the nodes received %v", c.name, methods)
		}
		if nodes[0] == 0 || nodes[1] == 0 {
			t.Errorf("%s: requests per node %v: want both", c.name, nodes)
		}
		t.Logf("%s: %d requests (%v), per node %v", c.name, len(reqs), methods, nodes)
	}
	// The nodes' own metrics: both answered tool calls, every one ok.
	if ok := m.nodeMetric(t, "attestd_mcp_tool_calls_total", "outcome", "ok"); ok[0] == 0 || ok[1] == 0 || ok[0]+ok[1] != 2*len(calls) {
		t.Errorf("tool calls answered ok per node: %v, want %d in all", ok, 2*len(calls))
	}
	checkForeignOrigins(t, m)
}

// checkForeignOrigins: through nginx, a request from a page of another
// origin, or for another host (DNS rebinding), is refused by the node; the
// same request from nginx's own origin is answered.
func checkForeignOrigins(t *testing.T, m *mcpFleet) {
	t.Helper()
	_, port, _ := strings.Cut(m.origin.Load().Host, ":")
	for _, c := range []struct {
		header map[string]string
		status int
	}{
		{map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{map[string]string{"Origin": m.edge.URL}, http.StatusOK},
		{map[string]string{"Host": "rebound.attacker.example:" + port}, http.StatusForbidden},
	} {
		a, err := m.post(client, c.header, mcpList)
		testenv.Must(t, err, "post %v", c.header)
		var e struct{ Error struct{ Code string } }
		if a.status != c.status || a.status == http.StatusForbidden && (json.Unmarshal(a.body, &e) != nil || e.Error.Code != "FORBIDDEN") {
			t.Errorf("%v: %d %.300s", c.header, a.status, a.body)
		}
	}
}

// TestEdgeMCPEachCallerItsOwnLimit: through nginx, at the production limit
// of 100 requests a minute, each MCP request counts once against its
// caller's own address (nginx's X-Forwarded-For, trusted from nginx
// alone), whatever the tool reads inside. Five callers make 20 tool calls
// each, all answered, while a sixth floods /mcp and is refused (429, with
// Retry-After, in the API's error envelope) after its own 100; each of the
// five's budgets counts its requests alone, and stays its own after.
func TestEdgeMCPEachCallerItsOwnLimit(t *testing.T) {
	t.Parallel()
	m := newMCPFleet(t)
	const calls, limit = 20, ratelimit.DefaultLimit
	// get_attestation reads the attestation, its proof, the log's key and
	// checkpoint: several API reads, one request.
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_attestation","arguments":{"pda":"` +
		m.env.Seeded.Samples[0].PDA + `"}}}`
	callers := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"}
	problems := make([][]string, len(callers)+1)
	var refused answer
	var answered int
	var wg sync.WaitGroup
	for i, ip := range callers {
		wg.Go(func() { problems[i] = m.callRepeatedly(fromAddr(ip), call, 1, calls) })
	}
	wg.Go(func() { refused, answered, problems[len(callers)] = m.flood(fromAddr("127.0.0.7")) })
	wg.Wait()
	for i, p := range problems {
		for _, s := range p {
			t.Errorf("caller %d: %s", i+1, s)
		}
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if retry, err := strconv.Atoi(refused.header.Get("Retry-After")); refused.status != http.StatusTooManyRequests || err != nil || retry < 1 ||
		answered != limit || json.Unmarshal(refused.body, &e) != nil || e.Error.Code != "RATE_LIMITED" {
		t.Fatalf("the flood: %d after %d answered, Retry-After %q: %.300s", refused.status, answered, refused.header.Get("Retry-After"), refused.body)
	}
	// The flooder refused, each caller's next call is its own 21st.
	for i, ip := range callers {
		for _, s := range m.callRepeatedly(fromAddr(ip), call, calls+1, 1) {
			t.Errorf("caller %d after the flood: %s", i+1, s)
		}
	}
	// Both nodes answered the calls; the refused request never reached
	// an endpoint (the limiter answered it, before the SDK).
	got := m.nodeMetric(t, "attestd_mcp_tool_calls_total", "tool", mcp.ToolGetAttestation, "outcome", "ok")
	lists := m.nodeMetric(t, "attestd_mcp_requests_total", "method", "tools/list")
	if got[0] == 0 || got[1] == 0 || got[0]+got[1] != len(callers)*(calls+1) || lists[0]+lists[1] != limit {
		t.Errorf("per node: %v tool calls answered (want %d in all), %v tool lists (want %d)", got, len(callers)*(calls+1), lists, limit)
	}
	t.Logf("the flood: %d answered, then %d with Retry-After %s", answered, refused.status, refused.header.Get("Retry-After"))
}

// callRepeatedly makes n tool calls from c, the first being the caller's
// request number first, and returns what was wrong with them: each must
// be answered with a structured result, and leave the caller the rest of
// its own budget.
func (m *mcpFleet) callRepeatedly(c *http.Client, call string, first, n int) []string {
	var problems []string
	for k := first; k < first+n; k++ {
		a, err := m.post(c, nil, call)
		if err != nil {
			return append(problems, fmt.Sprintf("request %d: %v", k, err))
		}
		var r struct {
			Result *struct {
				IsError           bool            `json:"isError"`
				StructuredContent json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if a.status != http.StatusOK || a.header.Get("RateLimit-Remaining") != strconv.Itoa(ratelimit.DefaultLimit-k) ||
			json.Unmarshal(a.body, &r) != nil || r.Result == nil || r.Result.IsError || len(r.Result.StructuredContent) == 0 {
			problems = append(problems, fmt.Sprintf("request %d: %d, RateLimit-Remaining %q: %.300s", k, a.status,
				a.header.Get("RateLimit-Remaining"), a.body))
		}
	}
	return problems
}

// flood lists the tools from c until refused, and returns the refusal and
// how many requests were answered before it; every one of those must
// have counted against c's own budget.
func (m *mcpFleet) flood(c *http.Client) (answer, int, []string) {
	var problems []string
	for n := 1; n <= ratelimit.DefaultLimit+1; n++ {
		a, err := m.post(c, nil, mcpList)
		switch {
		case err != nil:
			return answer{}, n - 1, append(problems, fmt.Sprintf("request %d: %v", n, err))
		case a.status == http.StatusTooManyRequests:
			return a, n - 1, problems
		case a.status != http.StatusOK || a.header.Get("RateLimit-Remaining") != strconv.Itoa(ratelimit.DefaultLimit-n):
			problems = append(problems, fmt.Sprintf("request %d: %d, RateLimit-Remaining %q", n, a.status, a.header.Get("RateLimit-Remaining")))
		}
	}
	return answer{}, ratelimit.DefaultLimit + 1, append(problems, "never refused")
}
