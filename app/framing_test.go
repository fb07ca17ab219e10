package app_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apptest"
	"github.com/attestd/attestd/internal/testenv"
)

// exchange writes request on a fresh connection, reads one answer, then
// reports whether the node closed the connection after it (rather than
// answering what followed the request on the wire).
func exchange(t *testing.T, root, request string) (res *http.Response, body []byte, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(root, "http://"))
	testenv.Must(t, err, "dial")
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, request)
	testenv.Must(t, err, "write")
	br := bufio.NewReader(conn)
	res, err = http.ReadResponse(br, nil)
	testenv.Must(t, err, "read answer to %.60q", request)
	body, err = io.ReadAll(res.Body)
	testenv.Must(t, err, "read body")
	res.Body.Close()
	// Whatever was left on the wire (a smuggled request) must not be
	// answered: the next read sees the end of the connection.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = br.ReadByte()
	return res, body, errors.Is(err, io.EOF) || isReset(err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestAmbiguousFramingIsRefused: two Content-Length headers (equal or
// not), two Host headers, or Content-Length beside Transfer-Encoding were
// served, fasthttp keeping the last (RFC 9112 sections 3.2 and 6.3: a
// request-smuggling shape behind a proxy that keeps the first). Each is
// now 400 in the envelope, naming the header, and the connection is
// closed after the answer, so nothing sent after it is read as a request.
func TestAmbiguousFramingIsRefused(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{})
	const next = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n" // what a smuggler hides
	for _, tc := range []struct{ name, req, want string }{
		{"two Content-Length, same value", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}" + next, "Content-Length"},
		{"two Content-Length, different values", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\ncontent-length: 2\r\n\r\n{}" + next, "Content-Length"},
		{"two Content-Length on a GET", "GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n" + next, "Content-Length"},
		{"Content-Length listing two values", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}" + next, ""},
		{"two Host", "GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nHost: evil.example\r\n\r\n" + next, "Host"},
		{"two Host, same value", "GET /api/v1/stats HTTP/1.1\r\nHOST: x\r\nhost: x\r\n\r\n" + next, "Host"},
		{"Content-Length then Transfer-Encoding", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + next, "Transfer-Encoding"},
		{"Transfer-Encoding then Content-Length", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n" + next, "Transfer-Encoding"},
		{"Transfer-Encoding chunked, identity", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + next, "Transfer-Encoding"},
		{"Transfer-Encoding twice", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + next, "Transfer-Encoding"},
		{"Content-Length with Transfer-Encoding identity", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: identity\r\n\r\n{}" + next, "Transfer-Encoding"},
		// What fasthttp refuses itself: the envelope, and closed too.
		{"two Content-Length, one not a number", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: x\r\n\r\n{}" + next, ""},
	} {
		res, body, closed := exchange(t, node.Root, tc.req)
		r := &apptest.Response{Status: res.StatusCode, Header: res.Header, Body: body}
		switch {
		case res.StatusCode != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || res.Header.Get("X-Request-ID") == "" ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"):
			t.Errorf("%s: %d %q %s, want 400 INVALID_PARAM in the envelope", tc.name, res.StatusCode, res.Header.Get("Content-Type"), body)
		case tc.want != "" && !strings.Contains(string(body), tc.want):
			t.Errorf("%s: %s does not name %s", tc.name, body, tc.want)
		case !closed:
			t.Errorf("%s: the connection stayed open after the 400", tc.name)
		}
	}
}

// TestPlainFramingIsServed: one Content-Length, one Host, chunked alone,
// and HTTP/1.0 without Host stay as they were.
func TestPlainFramingIsServed(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	node := env.StartNode(t, apptest.NodeOptions{})
	for _, tc := range []struct {
		name, req string
		want      int
	}{
		{"one of each", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200},
		{"chunked alone", "POST /api/v1/stats HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 405},
		{"HTTP/1.0 without Host", "GET /api/v1/health HTTP/1.0\r\n\r\n", 200},
		{"headers named like them", "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Host: y\r\nContent-Lengths: 1\r\nX-Content-Length: 2\r\nX-Transfer-Encoding: chunked\r\n\r\n", 200},
	} {
		res := rawHTTP(t, node.Root, tc.req)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, b, tc.want)
		}
	}
}
