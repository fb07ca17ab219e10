package mcp_test

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
)

// The node's own work per request for a free tool over /mcp against the
// REST read that gives the same answer, on the same node, without the
// kernel: requests piped through the node's fasthttp server on an
// in-memory connection (parsing, routing, the middleware, the handlers,
// writing the answer), one after the other, every answer hot in the
// node's cache. bench/mcp measures the same over loopback with wrk.
//
//	attestd stores -- go test -run '^$' -bench . ./internal/mcp/
//
// cpu-ns/op is the process's CPU time (all its threads: the tool's
// in-process API request runs on a goroutine of its own) per request.

// benchTool is a tool call and the REST request that gives its answer.
type benchTool struct {
	name, rest, args string
}

// benchNode starts a node with the remote endpoint over a small seeded
// database (as remoteNode does, without keys or premium routes: the
// tools measured are free) and returns the Fiber app, the Host the
// endpoint answers for and the tools with their REST requests.
func benchNode(b *testing.B) (*fiber.App, string, []benchTool) {
	b.Helper()
	env := apptest.NewEnv(b, apptest.Options{Agents: 3, Attestations: 60})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(b, err, "listen")
	origin, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(b, err, "origin")
	resolver, err := ratelimit.NewIPResolver(nil, "")
	testenv.Must(b, err, "resolver")
	node := env.StartNode(b, apptest.NodeOptions{Listener: ln, Routes: func(api *app.API) {
		r, err := mcp.NewRemote(mcp.RemoteConfig{Origin: origin, API: &inprocess.Transport{Handler: api.InProcess()},
			ClientIP: resolver.ClientIP, Logger: apptest.Logger()})
		testenv.Must(b, err, "remote endpoint")
		api.Page(fiber.MethodPost, mcp.Path, r.Handler())
	}})
	agent := env.Seeded.Agents[0].PDA.String()
	// Over the listener first: serving builds the route tree that
	// ServeConn then uses.
	if r := node.Get(b, "/agents/"+agent); r.Status != 200 {
		b.Fatalf("GET /agents/%s: %d", agent, r.Status)
	}
	return node.Fiber(), origin.Host, []benchTool{
		{mcp.ToolGetAgent, "/api/v1/agents/" + agent, `{"agentPda":"` + agent + `"}`},
		{mcp.ToolGetAgentStats, "/api/v1/agents/" + agent + "/stats", `{"agentPda":"` + agent + `"}`},
		// The Go client encodes the query with url.Values: keys sorted.
		{mcp.ToolListAttestations, "/api/v1/attestations?agentPda=" + agent + "&limit=20", `{"agentPda":"` + agent + `","limit":20}`},
	}
}

// restRequest is the GET of t's REST answer, as bytes on the wire.
func restRequest(host string, t benchTool) []byte {
	return []byte("GET " + t.rest + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: bench\r\n\r\n")
}

// toolRequest is the tools/call of t at protocol version as the official
// Go SDK client (v1.8.0) sends it: at 2026-07-28 with the per-request
// _meta (protocol version, client info, client capabilities) and the
// Mcp-Method and Mcp-Name headers (bench/mcp captures them from the
// client itself).
func toolRequest(host, version string, t benchTool) []byte {
	body, extra := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+t.name+`","arguments":`+t.args+`}}`, ""
	if version >= "2026-07-28" {
		body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"v1"},` +
			`"io.modelcontextprotocol/protocolVersion":"` + version + `"},"name":"` + t.name + `","arguments":` + t.args + `}}`
		extra = "Mcp-Method: tools/call\r\nMcp-Name: " + t.name + "\r\n"
	}
	return []byte("POST " + mcp.Path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: bench\r\n" +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: " + version + "\r\n" + extra + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// BenchmarkRESTRead is the baseline: the REST read of each tool's answer.
func BenchmarkRESTRead(b *testing.B) {
	a, host, ts := benchNode(b)
	for _, t := range ts {
		b.Run(t.name, func(b *testing.B) { benchServe(b, a, restRequest(host, t), false) })
	}
}

// BenchmarkRemoteToolCall is the same answer as a tools/call over /mcp,
// stateless with a JSON response, at protocol 2025-11-25 and 2026-07-28.
func BenchmarkRemoteToolCall(b *testing.B) {
	a, host, ts := benchNode(b)
	for _, t := range ts {
		for _, v := range []string{"2025-11-25", "2026-07-28"} {
			b.Run(t.name+"/"+v, func(b *testing.B) { benchServe(b, a, toolRequest(host, v, t), true) })
		}
	}
}

// benchServe warms req's answer, then pipes b.N copies of it through a's
// server and checks the answers: 200s, for a tool call a result.
func benchServe(b *testing.B, a *fiber.App, req []byte, tool bool) {
	serveN(b, a, req, 20, tool) // warm the node's cache and fasthttp's pools
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	serveN(b, a, req, b.N, tool)
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func serveN(b *testing.B, a *fiber.App, req []byte, n int, tool bool) {
	conn := &loopConn{req: req, left: n}
	if err := a.Server().ServeConn(conn); err != nil {
		b.Fatal(err)
	}
	first := conn.first.Bytes()
	if !bytes.HasPrefix(first, []byte("HTTP/1.1 200")) ||
		tool && (!bytes.Contains(first, []byte(`"structuredContent"`)) || bytes.Contains(first, []byte(`"isError":true`))) {
		b.Fatalf("first answer: %.600s", first)
	}
	if conn.answers < n || conn.ok < n {
		b.Fatalf("%d answers to %d requests, %d of them 200", conn.answers, n, conn.ok)
	}
}

// processCPU is the CPU time the process used so far (all threads).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopConn is a connection that sends the same request left times, then
// EOF, and reads the answers: it keeps the first 64 KiB written (the
// first answer, whole) and counts the answers and the 200s among them.
type loopConn struct {
	req     []byte
	off     int
	left    int
	first   bytes.Buffer
	tail    []byte
	answers int
	ok      int
}

var (
	statusLine = []byte("HTTP/1.1 ")
	okLine     = []byte("HTTP/1.1 200 ")
)

func (c *loopConn) Read(p []byte) (int, error) {
	n := 0
	for c.left > 0 && n < len(p) {
		k := copy(p[n:], c.req[c.off:])
		n += k
		if c.off += k; c.off == len(c.req) {
			c.off, c.left = 0, c.left-1
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *loopConn) Write(p []byte) (int, error) {
	if c.first.Len() < 64<<10 {
		c.first.Write(p[:min(len(p), 64<<10-c.first.Len())])
	}
	// Count status lines, also those split between two writes (the kept
	// tail's own were counted with the write before).
	seen, seenOK := bytes.Count(c.tail, statusLine), bytes.Count(c.tail, okLine)
	c.tail = append(c.tail, p...)
	c.answers += bytes.Count(c.tail, statusLine) - seen
	c.ok += bytes.Count(c.tail, okLine) - seenOK
	c.tail = append(c.tail[:0], c.tail[max(0, len(c.tail)-len(okLine)+1):]...)
	return len(p), nil
}

func (c *loopConn) Close() error        { return nil }
func (c *loopConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *loopConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *loopConn) SetDeadline(time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(time.Time) error { return nil }
