package premium_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestGzipWhenAccepted: the premium answers (cached history and report,
// per-request bulk verification) come gzip-compressed to a client that
// accepts gzip, decompress to exactly the plain answer, and stay plain for
// a client that does not; small answers are not compressed.
func TestGzipWhenAccepted(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 400})
	pn := startNode(t, env, premium.Config{})
	agent := env.Seeded.Agents[0].PDA.String()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	send := func(method, path string, body []byte, enc string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, pn.URL+path, bytes.NewReader(body))
		testenv.Must(t, err, "request")
		req.Header.Set("x-api-key", pn.key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		res, err := tr.RoundTrip(req)
		testenv.Must(t, err, "send")
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		testenv.Must(t, err, "read")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: status %d %s", method, path, res.StatusCode, b)
		}
		return res, b
	}
	ids := pdas(t, env, "ORDER BY pda LIMIT 200")
	cases := []struct {
		name, method, path string
		body               []byte
		compressed         bool
	}{
		{"full history", http.MethodGet, "/premium/full-history/" + agent, nil, true},
		{"forensic report", http.MethodGet, "/premium/forensic-report/" + agent, nil, true},
		{"bulk verify of 200", http.MethodPost, "/premium/bulk-verify", idsBody(ids), true},
		{"bulk verify of 1", http.MethodPost, "/premium/bulk-verify", idsBody(ids[:1]), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plainRes, plain := send(tc.method, tc.path, tc.body, "")
			plain = stableJSON(plain)
			if plainRes.Header.Get("Content-Encoding") != "" {
				t.Fatalf("compressed for a client that did not ask: %v", plainRes.Header)
			}
			for range 2 { // cached answers: the load, then the cached value
				zres, zb := send(tc.method, tc.path, tc.body, "br, gzip")
				if !tc.compressed {
					if zres.Header.Get("Content-Encoding") != "" {
						t.Fatalf("a %d-byte answer was compressed", len(plain))
					}
					if !bytes.Equal(stableJSON(zb), plain) {
						t.Fatalf("answer differs from the plain one:\n%s\n%s", zb, plain)
					}
					continue
				}
				if zres.Header.Get("Content-Encoding") != "gzip" || zres.Header.Get("Vary") != "Accept-Encoding" || len(zb) >= len(plain)/2 {
					t.Fatalf("gzip answer: headers %v, %d bytes for %d plain", zres.Header, len(zb), len(plain))
				}
				zr, err := gzip.NewReader(bytes.NewReader(zb))
				testenv.Must(t, err, "gzip reader")
				un, err := io.ReadAll(zr)
				testenv.Must(t, err, "decompress")
				if !bytes.Equal(stableJSON(un), plain) {
					t.Fatal("decompressed answer differs from the plain one")
				}
			}
			if res, _ := send(tc.method, tc.path, tc.body, "gzip;q=0"); res.Header.Get("Content-Encoding") != "" {
				t.Fatal("gzip sent to a client that refused it")
			}
		})
	}
}

// checkedAt says when a bulk verification ran: two verifications of the
// same ids may differ in it (a second apart) and in nothing else.
var checkedAt = regexp.MustCompile(`"checkedAt":"[^"]*"`)

func stableJSON(b []byte) []byte { return checkedAt.ReplaceAll(b, []byte(`"checkedAt":"-"`)) }
