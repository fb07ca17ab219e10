package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/bench/internal/wrk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The paths a tool's answer is measured on.
const (
	pathREST    = "REST GET (baseline)"
	pathMCP2025 = "/mcp, protocol 2025-11-25"
	pathMCP2026 = "/mcp, protocol 2026-07-28"
	pathOld     = "`attestd mcp --http`, 2025-11-25"
)

// tool is a tool call and the REST request that gives the same answer.
type tool struct {
	name, rest string
	args       map[string]any
}

func tools(agent string) []tool {
	return []tool{
		{"get_agent", "/api/v1/agents/" + agent, map[string]any{"agentPda": agent}},
		{"get_agent_stats", "/api/v1/agents/" + agent + "/stats", map[string]any{"agentPda": agent}},
		// The Go client encodes the query with url.Values: keys sorted.
		{"list_attestations", "/api/v1/attestations?agentPda=" + agent + "&limit=20", map[string]any{"agentPda": agent, "limit": 20}},
	}
}

// scenario is one wrk run: a GET of url, or a POST of body with header.
type scenario struct {
	tool, path, url, script string
	body                    []byte
	header                  http.Header
}

// result is one measured run. CPU figures are µs per request.
type result struct {
	tool, path                        string
	rps                               float64
	p50, p99                          string
	non2xx, sockErrs                  bool
	cpuNode, cpuOld, cpuRedis, cpuWrk float64
	bytes                             int
}

// server is the CPU per request of everything but the load generator.
func (r result) server() float64 { return r.cpuNode + r.cpuOld + r.cpuRedis }

// measure runs every tool's scenarios, REST first.
func measure(ctx context.Context, p params, rg *rig) ([]result, error) {
	dir, err := os.MkdirTemp("", "attestd-mcp-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var results []result
	for _, t := range tools(rg.agent) {
		ss := []scenario{{tool: t.name, path: pathREST, url: rg.nodeURL + t.rest}}
		for _, c := range []struct{ path, endpoint, version string }{
			{pathMCP2025, rg.nodeURL + "/mcp", "2025-11-25"},
			{pathMCP2026, rg.nodeURL + "/mcp", "2026-07-28"},
			{pathOld, rg.oldURL, "2025-11-25"},
		} {
			body, header, err := capture(ctx, c.endpoint, c.version, t)
			if err != nil {
				return nil, fmt.Errorf("%s over %s: %w", t.name, c.path, err)
			}
			s := scenario{tool: t.name, path: c.path, url: c.endpoint, body: body, header: header,
				script: filepath.Join(dir, fmt.Sprintf("%s-%d.lua", t.name, len(ss)))}
			if err := os.WriteFile(s.script, []byte(luaScript(body, header)), 0o644); err != nil {
				return nil, err
			}
			if p.verbose {
				fmt.Fprintf(os.Stderr, "[%s, %s] the SDK client's request:\n%s", t.name, c.path, luaScript(body, header))
			}
			ss = append(ss, s)
		}
		for _, s := range ss {
			r, err := rg.measureOne(ctx, p, s)
			if err != nil {
				return nil, fmt.Errorf("%s over %s: %w", s.tool, s.path, err)
			}
			results = append(results, r)
		}
	}
	return results, nil
}

// measureOne checks s's answer, warms it, then measures it.
func (rg *rig) measureOne(ctx context.Context, p params, s scenario) (result, error) {
	n, err := check(ctx, s)
	if err != nil {
		return result{}, err
	}
	if _, _, err := runWrk(ctx, p, s, p.warmup); err != nil {
		return result{}, err
	}
	var prof <-chan error
	if rg.metricsURL != "" {
		prof = rg.profile(ctx, p, s)
	}
	node0, old0, redis0 := benchkit.ProcessCPU(rg.nodePID), benchkit.ProcessCPU(rg.oldPID), benchkit.RedisCPU(ctx, rg.rdb)
	out, wrkCPU, err := runWrk(ctx, p, s, p.dur)
	if err != nil {
		return result{}, err
	}
	node1, old1, redis1 := benchkit.ProcessCPU(rg.nodePID), benchkit.ProcessCPU(rg.oldPID), benchkit.RedisCPU(ctx, rg.rdb)
	f := wrk.Parse(out)
	if f.RPS == 0 {
		return result{}, fmt.Errorf("no requests/s in wrk's output:\n%s", out)
	}
	reqs := f.RPS * p.dur.Seconds()
	us := func(d time.Duration) float64 { return d.Seconds() * 1e6 / reqs }
	r := result{tool: s.tool, path: s.path, rps: f.RPS, p50: f.P50, p99: f.P99, non2xx: f.Non2xx, sockErrs: f.SocketErrors,
		cpuNode: us(node1 - node0), cpuOld: us(old1 - old0), cpuRedis: us(redis1 - redis0), cpuWrk: us(wrkCPU), bytes: n}
	fmt.Fprintf(os.Stderr, "[%s, %s] %.0f req/s p50 %s p99 %s, CPU µs/req node %.1f old %.1f redis %.1f wrk %.1f%s\n",
		s.tool, s.path, r.rps, r.p50, r.p99, r.cpuNode, r.cpuOld, r.cpuRedis, r.cpuWrk,
		map[bool]string{true: " (non-2xx answers or socket errors!)"}[r.non2xx || r.sockErrs])
	if prof != nil {
		if err := <-prof; err != nil {
			return result{}, err
		}
	}
	return r, nil
}

var plain = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}

// check sends s once and makes sure it is answered: a 200, and for a tool
// call a result that is no tool error. It returns the answer's size.
func check(ctx context.Context, s scenario) (int, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if s.body != nil {
		method, body = http.MethodPost, bytes.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url, body)
	if err != nil {
		return 0, err
	}
	for k, vs := range s.header {
		req.Header[k] = vs
	}
	res, err := plain.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s %s: %d %.300s", method, s.url, res.StatusCode, b)
	}
	if s.body != nil && (!bytes.Contains(b, []byte(`"structuredContent"`)) || bytes.Contains(b, []byte(`"isError":true`))) {
		return 0, fmt.Errorf("%s: not a tool's answer: %.300s", s.url, b)
	}
	return len(b), nil
}

// capture connects the official Go SDK client to endpoint at protocol
// version, calls t, and returns the tools/call request it sent.
func capture(ctx context.Context, endpoint, version string, t tool) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rec := &recorder{next: http.DefaultTransport}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "attestd-mcp-bench", Version: "v1"}, nil).Connect(ctx,
		&mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		return nil, nil, fmt.Errorf("protocol %s negotiated, want %s", got, version)
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: t.name, Arguments: t.args})
	if err != nil {
		return nil, nil, err
	}
	if res.IsError || res.StructuredContent == nil {
		return nil, nil, fmt.Errorf("tool error or no structured content: %+v", res.Content)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.body == nil {
		return nil, nil, fmt.Errorf("no tools/call request seen")
	}
	return rec.body, rec.header, nil
}

// recorder keeps the last tools/call request that went through it.
type recorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	body   []byte
	header http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"method":"tools/call"`)) {
			r.mu.Lock()
			r.body, r.header = b, req.Header.Clone()
			r.mu.Unlock()
		}
	}
	return r.next.RoundTrip(req)
}

// luaScript is a wrk script that POSTs body with header.
func luaScript(body []byte, header http.Header) string {
	var b strings.Builder
	b.WriteString("wrk.method = \"POST\"\n")
	eq := "="
	for bytes.Contains(body, []byte("]"+eq+"]")) {
		eq += "="
	}
	fmt.Fprintf(&b, "wrk.body = [%s[%s]%s]\n", eq, body, eq)
	keys := make([]string, 0, len(header))
	for k := range header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "Content-Length" || k == "Host" {
			continue // wrk sets them
		}
		fmt.Fprintf(&b, "wrk.headers[%s] = %s\n", strconv.Quote(k), strconv.Quote(strings.Join(header[k], ", ")))
	}
	return b.String()
}

// runWrk runs wrk against s for d; it returns wrk's output and CPU time.
func runWrk(ctx context.Context, p params, s scenario, d time.Duration) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*d+10*time.Second)
	defer cancel()
	args := []string{"-t" + strconv.Itoa(p.threads), "-c" + strconv.Itoa(p.conns), "-d" + d.String(), "--timeout", "5s", "--latency"}
	if s.script != "" {
		args = append(args, "-s", s.script)
	}
	cmd := exec.CommandContext(ctx, "wrk", append(args, s.url)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	return out.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// profile fetches the node's CPU profile for the length of the run about
// to start and writes it to the profiles directory.
func (rg *rig) profile(ctx context.Context, p params, s scenario) <-chan error {
	errc := make(chan error, 1)
	secs := max(1, int(p.dur.Seconds())-1)
	name := strings.NewReplacer(" ", "", "`", "", ",", "_", "/", "", "(", "", ")", "").Replace(s.tool + "_" + s.path)
	go func() {
		res, err := http.Get(rg.metricsURL + "/debug/pprof/profile?seconds=" + strconv.Itoa(secs))
		if err != nil {
			errc <- fmt.Errorf("profile: %w", err)
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(p.profiles, name+".pprof"), b, 0o644)
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // the profile starts before the load
	return errc
}

// startOld starts `attestd mcp --http addr` with env until the returned
// stop, once it answers a tools/list (within 30 s).
func startOld(ctx context.Context, env []string, bin, addr string) (*exec.Cmd, func(), error) {
	list := scenario{url: "http://" + addr + "/mcp", body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`),
		header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-11-25"}}}
	return benchkit.StartUntil(ctx, env, 10*time.Second, bin, list.url, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, list.url, bytes.NewReader(list.body))
		req.Header = list.header.Clone()
		res, err := plain.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "mcp", "--http", addr)
}
