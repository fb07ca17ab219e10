package web_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/web"
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
// security headers; assets under their content-hashed names are immutable,
// under their plain names revalidate after a minute, the page on every
// load; all revalidate by ETag and come gzip-compressed to clients that
// accept it; pages go through the API's request ids.
func TestPagesAndAssets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	hashed := func(plain string) string {
		n := h.web.HashedName(plain)
		if n == "" {
			t.Fatalf("no hashed name of %s", plain)
		}
		return "/assets/" + n
	}
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(web.ContentSecurityPolicy, want) {
			t.Errorf("the CSP lacks %q", want)
		}
	}
	for _, tc := range []struct {
		path, ctype string
		status      int
		control     string
	}{
		{"/", "text/html; charset=utf-8", 200, web.PageCacheControl},
		{"/?agent=x#/", "text/html; charset=utf-8", 200, web.PageCacheControl},
		{hashed("app.js"), "text/javascript; charset=utf-8", 200, web.ImmutableCacheControl},
		{hashed("style.css"), "text/css; charset=utf-8", 200, web.ImmutableCacheControl},
		{hashed("favicon.svg"), "image/svg+xml", 200, web.ImmutableCacheControl},
		{"/assets/app.js", "text/javascript; charset=utf-8", 200, web.AssetCacheControl},
		{"/assets/style.css", "text/css; charset=utf-8", 200, web.AssetCacheControl},
		{"/assets/favicon.svg", "image/svg+xml", 200, web.AssetCacheControl},
		// Another release's name (a rolling deploy): the current file, asked for again next time.
		{"/assets/app.0123456789ab.js", "text/javascript; charset=utf-8", 200, web.PageCacheControl},
		// Modules are served inside the bundle only.
		{"/assets/explorer.js", "application/json", 404, ""},
		{"/assets/nope.js", "application/json", 404, ""},
		{"/assets/nope.0123456789ab.js", "application/json", 404, ""},
		{"/assets/index.html", "application/json", 404, ""},
		{"/assets/..%2fweb.go", "application/json", 404, ""},
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
		if cc := res.Header.Get("Cache-Control"); cc != tc.control {
			t.Errorf("%s: Cache-Control %q, want %q", tc.path, cc, tc.control)
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
		// Nothing from another origin: the only absolute URLs are the SVG
		// namespace (a name, never fetched), the wallets' download pages (links
		// a person follows) and a placeholder.
		b := string(body)
		for _, name := range []string{"http://www.w3.org/2000/svg", "https://phantom.com/download", "https://solflare.com/download",
			"https://backpack.app/download", "https://example.com/hooks/attestd"} {
			b = strings.ReplaceAll(b, name, "")
		}
		if strings.Contains(b, "http://") || strings.Contains(b, "https://") {
			i := max(strings.Index(b, "http://"), strings.Index(b, "https://"))
			t.Errorf("%s: refers to another origin: %q", tc.path, b[max(0, i-40):min(len(b), i+60)])
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

// TestIndexLinksTheFavicon: the page names its icon, an asset served here
// under its content-hashed name.
func TestIndexLinksTheFavicon(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	_, body := get(t, h.node.Root+"/", nil)
	if !strings.Contains(string(body), `<link rel="icon" href="/assets/`+h.web.HashedName("favicon.svg")+`" type="image/svg+xml">`) {
		t.Errorf("index.html links no SVG favicon by its hash:\n%s", body)
	}
}

// TestPagesOutsideTheLimit: the page and its files are not API calls.
// With a limit of 5 API requests a minute, 30 loads of the page and its
// files pass (without RateLimit headers) and take nothing from the API's
// 5, which stay exact: the 6th API request is 429, and the page still
// loads after it. The other root routes and unknown paths stay limited.
func TestPagesOutsideTheLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{limit: 5})
	files := []string{"/", "/?agent=x", "/assets/" + h.web.HashedName("app.js"), "/assets/" + h.web.HashedName("style.css"),
		"/assets/" + h.web.HashedName("favicon.svg"), "/assets/app.js", "/assets/style.css", "/assets/nope.js"}
	load := func(when string) {
		for i := 0; i < 30; i++ {
			path := files[i%len(files)]
			res, _ := get(t, h.node.Root+path, nil)
			want := http.StatusOK
			if strings.HasSuffix(path, "nope.js") {
				want = http.StatusNotFound
			}
			if res.StatusCode != want || res.Header.Get("RateLimit-Remaining") != "" {
				t.Fatalf("%s, %s: %d with RateLimit-Remaining %q", when, path, res.StatusCode, res.Header.Get("RateLimit-Remaining"))
			}
		}
	}
	load("before any API request")
	for i := 1; i <= 6; i++ {
		res, _ := get(t, h.node.Root+"/api/v1/stats", nil)
		want, remaining := http.StatusOK, strconv.Itoa(5-i)
		if i == 6 {
			want, remaining = http.StatusTooManyRequests, "0"
		}
		if res.StatusCode != want || res.Header.Get("RateLimit-Remaining") != remaining {
			t.Fatalf("API request %d: %d, RateLimit-Remaining %q; want %d, %s", i, res.StatusCode, res.Header.Get("RateLimit-Remaining"), want, remaining)
		}
	}
	load("after the API's limit is spent")
	for _, path := range []string{"/api/v1/health", "/api/v1/auth/nonce", "/nope", "/ASSETS/../api/v1/stats"} {
		if res, _ := get(t, h.node.Root+path, nil); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s after the limit: %d, want 429", path, res.StatusCode)
		}
	}
}
