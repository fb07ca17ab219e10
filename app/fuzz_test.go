package app_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
)

// FuzzPublicRoutes sends arbitrary query strings and ids to a real node:
// every answer must be 2xx or 4xx in the envelope, never a 5xx.
func FuzzPublicRoutes(f *testing.F) {
	for _, s := range []string{"limit=5", "limit=abc&offset=-1", "from=2026-11-21&to=2026-11-20", "actionType=ToolCall",
		"cursor=%ff%fe", "agentPda=11111111111111111111111111111111", "%", "a=b&a=c", "limit=1&limit=2",
		"bucket=day&from=0001-01-01", "bucket=hour&to=9999-12-31T23:59:59Z", "actionHash=" + strings.Repeat("0", 64),
		"cursor=YS4wLjExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTEx"} {
		f.Add(s, "11111111111111111111111111111111")
	}
	env := apptest.NewEnv(f, apptest.Options{Agents: 2, Attestations: 50})
	node := env.StartNode(f, apptest.NodeOptions{})
	f.Fuzz(func(t *testing.T, query, id string) {
		for _, target := range []string{
			"/api/v1/attestations?" + query,
			"/api/v1/attestations/" + url.PathEscape(id) + "?" + query,
			"/api/v1/agents/" + url.PathEscape(id),
			"/api/v1/agents/" + url.PathEscape(id) + "/stats",
			"/api/v1/stats?" + query,
			"/api/v1/agents?" + query,
			"/api/v1/stats/activity?" + query,
			"/api/v1/agents/" + url.PathEscape(id) + "/activity?" + query,
			"/api/v1/samples?" + query,
		} {
			req := httptest.NewRequest("GET", "http://x/", nil)
			req.URL.RawPath, req.URL.RawQuery = "", ""
			// A control character cannot be in a request line (url.Parse
			// lets one through in a fragment: the seed 947363815ac6d089);
			// malformed request lines are the hostile matrix's, on the wire.
			if strings.ContainsFunc(target, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				continue
			}
			u, err := url.Parse("http://x" + target)
			if err != nil {
				continue
			}
			req.URL = u
			req.RequestURI = target
			res, err := node.Fiber().Test(req, -1)
			if err != nil {
				t.Fatalf("%s: %v", target, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%s: %d %s", target, res.StatusCode, body)
			}
		}
	})
}

// FuzzAgentCursor: decoding never panics, and a cursor it accepts encodes
// back to one that decodes to the same position.
func FuzzAgentCursor(f *testing.F) {
	f.Add(app.EncodeAgentCursor(&store.AgentCursor{ActivityAt: time.Unix(1_800_000_000, 123_456_000), PDA: "11111111111111111111111111111111"}))
	f.Add("YS4tMS4x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := app.DecodeAgentCursor(s)
		if err != nil {
			return
		}
		again, err := app.DecodeAgentCursor(app.EncodeAgentCursor(c))
		if err != nil || !again.ActivityAt.Equal(c.ActivityAt) || again.PDA != c.PDA {
			t.Fatalf("%q: %+v, then %+v %v", s, c, again, err)
		}
	})
}

// FuzzFramingOnTheWire sends a request with fuzzed header lines and body,
// followed by a plain request, through a node's HTTP server on an
// in-memory connection: no answer is a 5xx, and a request refused for
// its framing or header bytes is the last one answered (what followed it
// is never served as a request).
func FuzzFramingOnTheWire(f *testing.F) {
	for _, s := range [][2]string{
		{"Host: x\r\nContent-Length: 2\r\n", "{}"},
		{"Host: x\r\nContent-Length: 0\r\nContent-Length: 2\r\n", "{}"},
		{"Host: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"},
		{"Host: x\r\nTransfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n"},
		{"Host: x\r\nHost: y\r\n", ""},
		{"Content-Length: 2\r\n", "{}"},
		{"Host: x\r\nX-A: a\x00b\r\n", ""},
		{"Host: x\r\nX-A: a\rb\r\n", ""},
		{"Host: x\r\nX-A: a\r\n b\r\n", ""},
		{"Host: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\nContent-Length: 3\r\n", "{}"},
	} {
		f.Add(s[0], s[1])
	}
	env := apptest.NewEnv(f, apptest.Options{})
	node := env.StartNode(f, apptest.NodeOptions{})
	// The node's listener built the routes under Fiber's lock; taking it
	// here orders that before ServeConn's reads of them.
	node.Fiber().Handler()
	refusals := []string{"Content-Length header", "Transfer-Encoding", "Host header", "NUL byte", "does not end its line", "line folding"}
	f.Fuzz(func(t *testing.T, head, body string) {
		raw := "POST /api/v1/stats HTTP/1.1\r\n" + head + "\r\n" + body + "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
		conn := &onceConn{in: strings.NewReader(raw)}
		_ = node.Fiber().Server().ServeConn(conn)
		br := bufio.NewReader(&conn.out)
		for i := 0; ; i++ {
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				return // the end of the answers (or of what parses as one)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%q: answer %d is %d %s", raw, i, res.StatusCode, b)
			}
			if res.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("INVALID_PARAM")) ||
				!slices.ContainsFunc(refusals, func(s string) bool { return bytes.Contains(b, []byte(s)) }) {
				continue
			}
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Fatalf("%q: refused (%s), then answered again: %q", raw, b, rest)
			}
			return
		}
	})
}

// onceConn is an in-memory connection that reads in, then EOF, and keeps
// what is written.
type onceConn struct {
	in  io.Reader
	out bytes.Buffer
}

func (c *onceConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *onceConn) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *onceConn) Close() error                { return nil }
func (c *onceConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *onceConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}
}
func (c *onceConn) SetDeadline(time.Time) error      { return nil }
func (c *onceConn) SetReadDeadline(time.Time) error  { return nil }
func (c *onceConn) SetWriteDeadline(time.Time) error { return nil }
