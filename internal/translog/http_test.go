package translog_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
)

// TestLogOffAnswers503: without a key every log route is 503 in the
// envelope, naming the variable to set.
func TestLogOffAnswers503(t *testing.T) {
	le := newLogEnv(t, 1)
	recs := le.add(t, 2, attestation.Finalized)
	off := le.startNode(t, translog.Config{})
	for _, p := range []string{"^/log/checkpoint", "/log/key", "/log/consistency?from=1&to=1", "^/log/tile/0/000",
		"^/log/tile/entries/000.p/1", "/attestations/" + recs[0].PDA + "/proof"} {
		var r *apptest.Response
		if root, ok := strings.CutPrefix(p, "^"); ok {
			r = off.GetRoot(t, root) // at the log's origin, outside the API
		} else {
			r = off.Get(t, p)
		}
		if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != "UNAVAILABLE" || !strings.Contains(r.ErrorMessage(), "ATTESTD_LOG_KEY") {
			t.Errorf("%s with the log off: %d %s", p, r.Status, r.Body)
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: 503 with Cache-Control %q", p, r.Header.Get("Cache-Control"))
		}
	}
}

// TestHostileLogRequests: malformed tile paths, sizes and ids are 4xx in
// the envelope (never 5xx), and nothing beyond the checkpoint is served.
func TestHostileLogRequests(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 300, attestation.Finalized)
	le.appendAll(t)
	waitCheckpoint(t, le.node, 300)
	// A node that holds only the verifier key serves the same.
	vk, err := translog.ParseKey(le.key.VerifierKey)
	testenv.Must(t, err, "verifier key")
	verifierOnly := le.startNode(t, translog.Config{Key: vk})
	waitCheckpoint(t, verifierOnly, 300)

	tiles400 := []string{"0", "0/", "0/1", "00/000", "9/000", "0/x000/001", "0/001/002", "0/000.p/0", "0/000.p/256",
		"0/000.p/01", "0/000.p/", "entries", "entries/", "entries/1", "data/000", "0/%30%30%30", "0/000%2Ep/1", "0/../000",
		"0/000/", "-1/000", "0/000.p/1/", "0/x001/x002/x003/x004/x005/x006/007", strings.Repeat("x001/", 20) + "000",
		"0/\u0660\u0660\u0660", "0/000.p/1%00", "entries/000.p/-1", "entries/000.p/1e2", "0/000;x", "0/+00"}
	tiles404 := []string{"0/001.p/45", "0/002", "1/000", "1/000.p/2", "entries/001.p/45", "entries/001", "2/000.p/1",
		"0/x001/000", "7/x036/x028/x797/x018/x963/967"}
	cons400 := []string{"", "?from=1", "?to=1", "?from=0&to=1", "?from=2&to=1", "?from=1&to=301", "?from=-1&to=2", "?from=01&to=2",
		"?from=1&to=2&x=1", "?from=1&from=1&to=2", "?from=1.0&to=2", "?from=1e2&to=300", "?from=%201&to=2", "?from=1&to=" + strings.Repeat("9", 30),
		"?from=9223372036854775807&to=9223372036854775807", "?from=0x1&to=2", "?from=1&to=" + url.QueryEscape("٢")}
	proof400 := []string{"nope", "0", strings.Repeat("1", 45), "11111111111111111111111111111111I", "%00", "../checkpoint"}
	count := 0
	check := func(path string, want int) {
		t.Helper()
		count++
		target := le.node.URL + path
		if strings.HasPrefix(path, "/log/tile/") || strings.HasPrefix(path, "/log/checkpoint") || strings.HasPrefix(strings.ToLower(path), "/log/tile") {
			target = le.node.Root + path // the origin's path, outside the API
		}
		res, err := http.Get(target)
		testenv.Must(t, err, "GET %s", path)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %d %s, want %d", path, res.StatusCode, b, want)
			return
		}
		if want >= 400 && (!strings.Contains(string(b), `"error"`) || res.Header.Get("Cache-Control") != "no-store") {
			t.Errorf("GET %s: %d without the envelope or no-store: %s", path, want, b)
		}
	}
	for _, p := range tiles400 {
		check("/log/tile/"+p, http.StatusBadRequest)
	}
	// Fiber routes case-insensitively; the tile's one path is lower case.
	check("/LOG/TILE/0/000", http.StatusBadRequest)
	check("/log/Tile/0/000", http.StatusBadRequest)
	for _, p := range tiles404 {
		check("/log/tile/"+p, http.StatusNotFound)
	}
	for _, q := range cons400 {
		check("/log/consistency"+q, http.StatusBadRequest)
	}
	for _, id := range proof400 {
		res, err := http.Get(le.node.URL + "/attestations/" + id + "/proof")
		testenv.Must(t, err, "GET")
		res.Body.Close()
		count++
		if res.StatusCode < 400 || res.StatusCode >= 500 {
			t.Errorf("proof of %q: %d", id, res.StatusCode)
		}
	}
	for _, p := range []string{"/log/checkpoint?x=1", "/log/key?x=1", "/log/tile/0/000?x=1"} {
		check(p, http.StatusBadRequest)
	}
	check("/log/tile/0/000", http.StatusOK)
	check("/log/tile/0/001.p/44", http.StatusOK)
	check("/log/consistency?from=300&to=300", http.StatusOK)
	t.Logf("%d hostile or edge requests, all answered as expected", count)

	// Conditional requests: 304 without a body, for every kind of answer.
	for _, p := range []string{"/log/checkpoint", "/log/key", "/log/tile/0/000", "/log/tile/entries/001.p/44",
		"/log/consistency?from=2&to=300", "/attestations/" + pdaAt(t, le, 5) + "/proof"} {
		res, err := http.Get(at(le.node, p))
		testenv.Must(t, err, "GET")
		res.Body.Close()
		etag := res.Header.Get("ETag")
		if res.StatusCode != 200 || etag == "" {
			t.Fatalf("%s: %d, ETag %q", p, res.StatusCode, etag)
		}
		req, _ := http.NewRequest(http.MethodGet, at(le.node, p), nil)
		req.Header.Set("If-None-Match", etag)
		res, err = http.DefaultClient.Do(req)
		testenv.Must(t, err, "GET")
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotModified || len(b) != 0 {
			t.Errorf("%s with If-None-Match: %d, %d bytes", p, res.StatusCode, len(b))
		}
	}
	// The key, as the operator publishes it; the same from a node that holds only it.
	for _, n := range []string{le.node.URL, verifierOnly.URL} {
		res, err := http.Get(n + "/log/key")
		testenv.Must(t, err, "GET key")
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) != le.key.VerifierKey+"\n" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("key: %q (%s)", b, res.Header.Get("Content-Type"))
		}
	}
	// HEAD answers as GET without the body; other methods are 405 naming
	// both (the tile route's wildcard included).
	for _, p := range []string{"/log/checkpoint", "/log/key", "/log/tile/0/000", "/log/consistency?from=2&to=300",
		"/attestations/" + pdaAt(t, le, 5) + "/proof"} {
		res, err := http.Head(at(le.node, p))
		testenv.Must(t, err, "HEAD")
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == "" || res.Header.Get("Cache-Control") == "" {
			t.Errorf("HEAD %s: %d, ETag %q, Cache-Control %q", p, res.StatusCode, res.Header.Get("ETag"), res.Header.Get("Cache-Control"))
		}
		req, _ := http.NewRequest(http.MethodDelete, at(le.node, p), nil)
		res, err = http.DefaultClient.Do(req)
		testenv.Must(t, err, "DELETE")
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("DELETE %s: %d, Allow %q, want 405 and \"GET, HEAD\"", p, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	r := verifierOnly.Get(t, "/attestations/"+pdaAt(t, le, 299)+"/proof")
	if r.Status != http.StatusOK {
		t.Fatalf("proof from a verifier-key node: %d %s", r.Status, r.Body)
	}
}

// at is the URL of a log path on n: the checkpoint and tiles at the
// origin's path below the root, the rest below the API prefix.
func at(n *apptest.Node, p string) string {
	if strings.HasPrefix(p, "/log/checkpoint") || strings.HasPrefix(p, "/log/tile/") {
		return n.Root + p
	}
	return n.URL + p
}
