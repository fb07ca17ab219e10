package web_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/web"
)

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	testenv.Must(t, err, "request")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	testenv.Must(t, err, "GET %s", url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read")
	return res, b
}

var securityHeaders = map[string]string{
	"Content-Security-Policy": web.ContentSecurityPolicy,
	"X-Frame-Options":         "DENY",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         web.ReferrerPolicy,
}

// TestPagesAndAssets: every page and asset, a 404 included, carries the
// security headers; assets revalidate by ETag and come gzip-compressed to
// clients that accept it; pages go through the API's middleware.
func TestPagesAndAssets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(web.ContentSecurityPolicy, want) {
			t.Errorf("the CSP lacks %q", want)
		}
	}
	for _, tc := range []struct {
		path, ctype string
		status      int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/?agent=x#/", "text/html; charset=utf-8", 200},
		{"/assets/app.js", "text/javascript; charset=utf-8", 200},
		{"/assets/explorer.js", "text/javascript; charset=utf-8", 200},
		{"/assets/console.js", "text/javascript; charset=utf-8", 200},
		{"/assets/style.css", "text/css; charset=utf-8", 200},
		{"/assets/live.js", "text/javascript; charset=utf-8", 200},
		{"/assets/devwallet.js", "text/javascript; charset=utf-8", 200},
		{"/assets/favicon.svg", "image/svg+xml", 200},
		{"/assets/nope.js", "application/json", 404},
		{"/assets/index.html", "application/json", 404},
		{"/assets/..%2fweb.go", "application/json", 404},
	} {
		res, body := get(t, h.node.Root+tc.path, nil)
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.status, tc.ctype)
		}
		for k, v := range securityHeaders {
			if got := res.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", tc.path, k, got, v)
			}
		}
		if res.Header.Get("X-Request-ID") == "" { // the API's middleware ran
			t.Errorf("%s: no request id", tc.path)
		}
		if tc.status != 200 {
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("%s: error with Cache-Control %q", tc.path, cc)
			}
			continue
		}
		if cc := res.Header.Get("Cache-Control"); cc != web.AssetCacheControl {
			t.Errorf("%s: Cache-Control %q", tc.path, cc)
		}
		etag := res.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("%s: no ETag", tc.path)
		}
		res2, body2 := get(t, h.node.Root+tc.path, map[string]string{"If-None-Match": etag})
		if res2.StatusCode != http.StatusNotModified || len(body2) != 0 {
			t.Errorf("%s with its ETag: %d, %d bytes", tc.path, res2.StatusCode, len(body2))
		}
		zres, zbody := get(t, h.node.Root+tc.path, map[string]string{"Accept-Encoding": "gzip"})
		if len(body) > 512 {
			if zres.Header.Get("Content-Encoding") != "gzip" || zres.Header.Get("ETag") == etag {
				t.Errorf("%s: gzip answer %q tag %q", tc.path, zres.Header.Get("Content-Encoding"), zres.Header.Get("ETag"))
			}
			zr, err := gzip.NewReader(strings.NewReader(string(zbody)))
			testenv.Must(t, err, "gunzip")
			plain, err := io.ReadAll(zr)
			if err != nil || string(plain) != string(body) {
				t.Errorf("%s: gzip form differs from the plain one", tc.path)
			}
		}
		if strings.Contains(string(body), "<script>") || strings.Contains(string(body), " onclick=") || strings.Contains(string(body), "style=") {
			t.Errorf("%s: inline script or style", tc.path)
		}
		// (The SVG namespace is a name, never fetched.)
		if b := strings.ReplaceAll(string(body), `xmlns="http://www.w3.org/2000/svg"`, ""); strings.Contains(b, "http://") || strings.Contains(b, "https://cdn") {
			t.Errorf("%s: refers to another origin", tc.path)
		}
	}
	// HEAD answers like GET, without a body.
	req, _ := http.NewRequest(http.MethodHead, h.node.Root+"/", nil)
	res, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "HEAD /")
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /: %d %v", res.StatusCode, res.Header)
	}
	// A POST to a page is 405 in the envelope.
	res, err = http.Post(h.node.Root+"/", "text/plain", strings.NewReader("x"))
	testenv.Must(t, err, "POST /")
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", res.StatusCode)
	}
}

// TestIndexLinksTheFavicon: the page names its icon, an asset served here.
func TestIndexLinksTheFavicon(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	_, body := get(t, h.node.Root+"/", nil)
	if !strings.Contains(string(body), `<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">`) {
		t.Errorf("index.html links no SVG favicon:\n%s", body)
	}
}
