package stream

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// rawAnswer sends raw on a fresh connection and reads the status line, the
// headers and up to the first event (or the end).
func (x *harness) rawAnswer(t *testing.T, raw string) (status string, header http.Header, body string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(x.node.Root, "http://"))
	testenv.Must(t, err, "dial")
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var sent *http.Request
	if strings.HasPrefix(raw, "HEAD ") {
		sent = &http.Request{Method: http.MethodHead}
	}
	res, err := http.ReadResponse(br, sent)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") == "text/event-stream" {
		// The first frame only: the stream stays open.
		b := make([]byte, 512)
		n, _ := res.Body.Read(b)
		c.Close() // before the body's Close, which would read to the end
		return res.Status, res.Header, string(b[:n])
	}
	b, _ := io.ReadAll(res.Body)
	return res.Status, res.Header, string(b)
}

// TestHostileRequests: what a stream request can carry that it should
// not. Each case names the status (and a word of the body) it must get;
// none may be a 5xx, and none may start a stream it should not.
func TestHostileRequests(t *testing.T) {
	x := newHarness(t, Config{MaxPerIP: 3})
	a := x.add(1, 0, attestation.Confirmed)[0]
	good := cursorOf(a)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	req := func(target string, headers ...string) string {
		return "GET /api/v1/attestations/stream" + target + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(headers, "") + "\r\n"
	}
	cases := []struct {
		name, raw, status, contains string
	}{
		{"huge Last-Event-ID (10 KB)", req("", "Last-Event-ID: "+strings.Repeat("A", 10<<10)+"\r\n"), "400", "Last-Event-ID"},
		{"Last-Event-ID over the 16 KiB header budget", req("", "Last-Event-ID: "+strings.Repeat("A", 20<<10)+"\r\n"), "431", "HEADERS_TOO_LARGE"},
		{"Last-Event-ID 257 chars", req("", "Last-Event-ID: "+strings.Repeat("A", 257)+"\r\n"), "400", "Last-Event-ID"},
		{"Last-Event-ID not base64", req("", "Last-Event-ID: ***\r\n"), "400", "Last-Event-ID"},
		{"Last-Event-ID base64 of junk", req("", "Last-Event-ID: "+b64("hello")+"\r\n"), "400", "Last-Event-ID"},
		{"cursor with negative time", req("?after=" + b64("-1.5."+a.PDA)), "400", "after"},
		{"cursor with slot overflow", req("?after=" + b64("1.99999999999999999999."+a.PDA)), "400", "after"},
		{"cursor with a bad address", req("?after=" + b64("1.5.0OIl")), "400", "after"},
		{"cursor with padding", req("?after=" + padded("5."+a.PDA)), "400", "after"},
		{"two Last-Event-ID headers", req("", "Last-Event-ID: "+good+"\r\n", "Last-Event-ID: "+good+"\r\n"), "400", "more than once"},
		{"after 10 KB", req("?after=" + strings.Repeat("A", 10<<10)), "400", "after"},
		{"after twice", req("?after=" + good + "&after=" + good), "400", "more than once"},
		{"agentPda not base58", req("?agentPda=0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl"), "400", "agentPda"},
		{"agentPda 5 KB", req("?agentPda=" + strings.Repeat("1", 5<<10)), "400", "agentPda"},
		{"agentPda twice", req("?agentPda=" + a.AgentPDA + "&agentPda=" + a.AgentPDA), "400", "more than once"},
		{"actionType unknown", req("?actionType=Launch"), "400", "actionType"},
		{"unknown parameter", req("?cursor=" + good), "400", "unknown query parameter"},
		{"known cursor, wrong slot", req("?after=" + b64("1700000000.7."+a.PDA)), "200", CodeCursorUnknown},
		{"empty after: live", req("?after="), "200", "retry: 2000"},
		{"empty Last-Event-ID: live", req("", "Last-Event-ID: \r\n"), "200", "retry: 2000"},
		{"Last-Event-ID wins over a bad after", req("?after=junk", "Last-Event-ID: "+good+"\r\n"), "200", "retry: 2000"},
		{"Accept: application/json", req("", "Accept: application/json\r\n"), "200", "retry: 2000"},
		{"Accept-Encoding: gzip", req("", "Accept-Encoding: gzip, deflate, br\r\n"), "200", "retry: 2000"},
		{"Accept-Encoding: *", req("", "Accept-Encoding: *;q=1\r\n"), "200", "retry: 2000"},
		{"trailing slash", "GET /api/v1/attestations/stream/ HTTP/1.1\r\nHost: x\r\n\r\n", "200", "retry: 2000"},
		{"a body on GET", "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "200", "retry: 2000"},
		{"HTTP/1.0", "GET /api/v1/attestations/stream HTTP/1.0\r\n\r\n", "200", "retry: 2000"},
		{"HEAD", "HEAD /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\n\r\n", "200", ""},
		{"POST", "POST /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "405", "METHOD_NOT_ALLOWED"},
		{"OPTIONS", "OPTIONS /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\n\r\n", "405", "METHOD_NOT_ALLOWED"},
		{"PROPFIND", "PROPFIND /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\n\r\n", "405", "METHOD_NOT_ALLOWED"},
	}
	for _, c := range cases {
		status, h, body := x.rawAnswer(t, c.raw)
		if !strings.HasPrefix(status, c.status) || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %s %q, want %s containing %q", c.name, status, body, c.status, c.contains)
			continue
		}
		if strings.HasPrefix(status, "200") && !strings.HasPrefix(c.name, "HEAD") {
			if h.Get("Content-Encoding") != "" || h.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: Content-Encoding %q Cache-Control %q", c.name, h.Get("Content-Encoding"), h.Get("Cache-Control"))
			}
			if c.name == "HTTP/1.0" && len(h.Values("Transfer-Encoding")) > 0 {
				t.Errorf("HTTP/1.0 answered with Transfer-Encoding %q", h.Values("Transfer-Encoding"))
			}
		}
	}
	t.Logf("%d hostile requests", len(cases))
	testenv.WaitFor(t, "every stream of the matrix closed", testenv.Patience, func() bool { return x.h.Open() == 0 })

	// Many streams: the cap holds, X-Forwarded-For from an untrusted peer
	// does not dodge it, and half-open connections (the client shut its
	// sending side, or vanished) give their slots back.
	var held []net.Conn
	for range 3 {
		held = append(held, x.rawConn("", ""))
	}
	testenv.WaitFor(t, "three streams", testenv.Patience, func() bool { return x.h.Open() == 3 })
	status, _, body := x.rawAnswer(t, req("", "X-Forwarded-For: 203.0.113.9\r\n"))
	if !strings.HasPrefix(status, "429") || !strings.Contains(body, "RATE_LIMITED") {
		t.Fatalf("a fourth stream with a spoofed X-Forwarded-For: %s %s", status, body)
	}
	held[0].(*net.TCPConn).CloseWrite() // half-closed
	held[1].Close()
	testenv.WaitFor(t, "slots of closed connections given back", testenv.Patience, func() bool { return x.h.Open() == 1 })
}

// padded encodes a cursor whose base64 needs padding, with the padding.
func padded(rest string) string {
	for ts := 1; ; ts++ {
		s := base64.URLEncoding.EncodeToString([]byte(strconv.Itoa(ts) + "." + rest))
		if strings.HasSuffix(s, "=") {
			return s
		}
	}
}
