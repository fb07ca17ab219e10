package app_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// rawHTTP sends bytes as they are on a fresh connection and reads one
// answer.
func rawHTTP(t *testing.T, root, request string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(root, "http://"))
	testenv.Must(t, err, "dial")
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, request)
	testenv.Must(t, err, "write")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	testenv.Must(t, err, "read answer to %.40q", request)
	return res
}

func envelope(t *testing.T, res *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	r := &apptest.Response{Status: res.StatusCode, Header: res.Header, Body: b}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || r.ErrorCode() == "" {
		t.Errorf("status %d without the envelope: %q %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if res.Header.Get("X-Request-ID") == "" {
		t.Errorf("status %d without X-Request-ID", res.StatusCode)
	}
	return r.ErrorCode() + " " + string(b)
}

// TestMetricsSurviveMixedTraffic: labels once kept c.Method() while it
// pointed into fasthttp's reused buffer ("POS", "GETIONS"), and /metrics
// answered 500 for good after ~1,000 mixed requests. Labels are now
// constants from a bounded set, whatever the methods sent.
func TestMetricsSurviveMixedTraffic(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 20})
	node := env.StartNode(t, apptest.NodeOptions{})
	methods := []string{"GET", "POST", "OPTIONS", "DELETE", "PATCH", "FOO", "GETIONS", "PROPFIND", "M" + strings.Repeat("X", 300)}
	paths := []string{"/stats", "/attestations", "/attestations?limit=3", "/nope", "/health"}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				m, p := methods[(w+i)%len(methods)], paths[(w*7+i)%len(paths)]
				req, _ := http.NewRequest(m, node.URL+p, nil)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}(w)
	}
	wg.Wait()
	mfs, err := node.Reg.Gather()
	testenv.Must(t, err, "gather metrics after 2,000 mixed requests")
	allowed := map[string]bool{"other": true}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"} {
		allowed[m] = true
	}
	for _, mf := range mfs {
		if mf.GetName() != "attestd_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && !allowed[l.GetValue()] {
					t.Errorf("method label %q", l.GetValue())
				}
			}
		}
	}
}

// TestUnknownMethodsGetTheEnvelopeAndTheLimit: FOO /api/v1/stats was a
// plain-text 400 from Fiber with no request id, answered even to a client
// at its limit.
func TestUnknownMethodsGetTheEnvelopeAndTheLimit(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		d.Middleware = append(d.Middleware, env.NewLimiter(t, 3).Middleware())
	}})
	for _, tc := range []struct{ method, path, code string }{
		{"FOO", "/stats", "METHOD_NOT_ALLOWED 405"},
		{"PROPFIND", "/nope", "NOT_FOUND 404"},
	} {
		r := node.Do(t, tc.method, tc.path, nil, nil)
		if got := fmt.Sprintf("%s %d", r.ErrorCode(), r.Status); got != tc.code || r.Header.Get("X-Request-ID") == "" ||
			r.Header.Get("RateLimit-Limit") != "3" || !strings.Contains(string(r.Body), tc.method) {
			t.Errorf("%s %s: %s %s (request id %q, limit %q)", tc.method, tc.path, got, r.Body,
				r.Header.Get("X-Request-ID"), r.Header.Get("RateLimit-Limit"))
		}
	}
	node.Get(t, "/stats") // the third request of this client
	if r := node.Do(t, "FOO", "/stats", nil, nil); r.Status != 429 || r.ErrorCode() != "RATE_LIMITED" {
		t.Fatalf("FOO over the limit: %d %s", r.Status, r.Body)
	}
}

// TestTransportErrorsAreOurs: what fasthttp refuses before any handler
// (oversized headers, a bad Content-Length) is answered in the envelope,
// with its own code and our words, never fasthttp's.
func TestTransportErrorsAreOurs(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{})
	big := "GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
	if got := envelope(t, rawHTTP(t, node.Root, big)); !strings.HasPrefix(got, "HEADERS_TOO_LARGE") {
		t.Errorf("oversized headers: %s", got)
	}
	for _, req := range []string{
		"POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
	} {
		got := envelope(t, rawHTTP(t, node.Root, req))
		if !strings.HasPrefix(got, "INVALID_PARAM") || strings.Contains(strings.ToLower(got), "content-length") &&
			!strings.Contains(got, "malformed HTTP request") {
			t.Errorf("%q: %s", req, got)
		}
	}
}

// TestConnectionCapPerIP: one client IP cannot hold more than its share of
// connections on a node reached directly; trusted proxies are exempt.
func TestConnectionCapPerIP(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	for _, tc := range []struct {
		name   string
		exempt func(netip.Addr) bool
		want   int // connections served of 6
	}{
		{"capped", nil, 4},
		{"trusted proxy", func(a netip.Addr) bool { return a.IsLoopback() }, 6},
	} {
		node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
			d.ConnLimit = app.ConnLimit{PerIP: 4, Exempt: tc.exempt}
		}})
		var conns []net.Conn
		served := 0
		for i := 0; i < 6; i++ {
			c, err := net.Dial("tcp", strings.TrimPrefix(node.Root, "http://"))
			testenv.Must(t, err, "dial")
			conns = append(conns, c)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c, "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s: connection %d: %v", tc.name, i, err)
			}
			if res.StatusCode == 429 {
				envelope(t, res)
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			served++
		}
		if served != tc.want {
			t.Errorf("%s: %d of 6 connections served, want %d", tc.name, served, tc.want)
		}
		for _, c := range conns {
			c.Close()
		}
	}
}

// TestEarlyAnswerReachesAClientStillSending: a node answers 431 as soon as
// the headers pass its limit and closes, while the client is still
// writing them. Closed outright, the socket's unread input made the kernel
// reset the connection, and the client lost the answer (a broken pipe on
// its write, or a reset on its read). With the lingering close it reads
// the 431 in the envelope, whatever the size of what it still sends.
func TestEarlyAnswerReachesAClientStillSending(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{})
	for _, size := range []int{20 << 10, 100 << 10, 200 << 10} {
		for i := 0; i < 5; i++ {
			conn, err := net.Dial("tcp", strings.TrimPrefix(node.Root, "http://"))
			testenv.Must(t, err, "dial")
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			wrote := make(chan error, 1)
			go func() { // in 4 KiB writes, as Go's HTTP client sends
				req := "GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", size) + "\r\n\r\n"
				for len(req) > 0 {
					n := min(len(req), 4<<10)
					if _, err := io.WriteString(conn, req[:n]); err != nil {
						wrote <- err
						return
					}
					req = req[n:]
				}
				wrote <- nil
			}()
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("%d KiB of headers, try %d: no answer: %v", size>>10, i, err)
			}
			if got := envelope(t, res); !strings.HasPrefix(got, "HEADERS_TOO_LARGE") {
				t.Errorf("%d KiB of headers: %s", size>>10, got)
			}
			if err := <-wrote; err != nil {
				t.Errorf("%d KiB of headers, try %d: the node reset the connection under the client's write: %v", size>>10, i, err)
			}
			conn.Close()
		}
	}
}

// TestUnknownParameterOnARouteWithoutAny: the 400 says the route takes no
// parameters instead of listing an empty set.
func TestUnknownParameterOnARouteWithoutAny(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{})
	res := node.Get(t, "/health?verbose=1")
	if res.Status != 400 || res.ErrorCode() != "INVALID_PARAM" || !strings.Contains(string(res.Body), `\"verbose\"; this route takes none`) {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
}

// TestSlowClientIsCutAfterKeptAliveRequests: a client that trickles a
// request's headers is cut at the read timeout, also on a connection whose
// earlier requests left the (longer) idle deadline in force: the node
// applies deadlines only when they move, and an earlier one must move.
func TestSlowClientIsCutAfterKeptAliveRequests(t *testing.T) {
	env := apptest.NewEnv(t, apptest.Options{})
	const read, idle = time.Second, 8 * time.Second
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		d.Timeouts = app.Timeouts{Read: read, Write: time.Second, Idle: idle}
	}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(node.Root, "http://"))
	testenv.Must(t, err, "dial")
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	for i := range 40 {
		_, err := io.WriteString(conn, "GET /api/v1/no-such-route HTTP/1.1\r\nHost: attestd\r\n\r\n")
		testenv.Must(t, err, "write request %d", i)
		res, err := http.ReadResponse(br, nil)
		testenv.Must(t, err, "read answer %d", i)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d: %d, want 404", i, res.StatusCode)
		}
	}
	start := time.Now()
	_, err = io.WriteString(conn, "GET /api/v1/stats HTTP/1.1\r\nHost: attestd\r\n") // and nothing more
	testenv.Must(t, err, "write the first half")
	res, err := http.ReadResponse(br, nil)
	took := time.Since(start)
	switch {
	case err == nil:
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("a half-sent request got %d, want 408 or a closed connection", res.StatusCode)
		}
	case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
		t.Fatalf("waiting for the node to cut the connection: %v (after %v)", err, took)
	}
	// Cut at the read timeout (less up to the slack), well before the idle
	// timeout: the bound leaves room for a loaded machine.
	if took < read-read/8-50*time.Millisecond || took > idle/2 {
		t.Fatalf("cut after %v; want about the read timeout %v (the idle timeout is %v)", took, read, idle)
	}
}
