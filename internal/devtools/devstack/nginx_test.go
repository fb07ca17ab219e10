package devstack

import (
	"os"
	"strings"
	"testing"
)

// TestRenderNginxSite: the deploy configuration renders for loopback, with
// everything but the listen line, the upstream servers, TLS and the cache
// path kept as written; a file of another shape is refused.
func TestRenderNginxSite(t *testing.T) {
	site, err := os.ReadFile("../../../deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := RenderNginxSite(site, 18123, "/tmp/x/cache", []string{"127.0.0.1:1", "127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"listen 127.0.0.1:18123;", "proxy_cache_path /tmp/x/cache levels=",
		"    server 127.0.0.1:1 max_fails=1 fail_timeout=10s;\n    server 127.0.0.1:2 max_fails=1 fail_timeout=10s;\n", "least_conn;",
		"proxy_next_upstream error timeout;", "keepalive 256;", "proxy_cache attestd;",
		"server_name api.example.com;", "proxy_hide_header X-Request-ID;"} {
		if !strings.Contains(s, want) {
			t.Errorf("rendered site lacks %q:\n%s", want, s)
		}
	}
	for _, gone := range []string{"10.0.0.5", "10.0.0.6", "listen 443", "/var/cache/nginx"} {
		if strings.Contains(s, gone) {
			t.Errorf("rendered site still has %q", gone)
		}
	}
	// Everything else is kept line for line.
	if a, b := strings.Count(string(site), "\n"), strings.Count(s, "\n"); a != b {
		t.Errorf("%d lines became %d", a, b)
	}
	for _, bad := range []string{
		strings.Replace(string(site), "proxy_cache_path", "# proxy_cache_path", 1),
		strings.Replace(string(site), "listen 443", "listen 443;\n    listen 80", 1),
		strings.Replace(string(site), "upstream attestd", "# upstream attestd", 1),
	} {
		if _, err := RenderNginxSite([]byte(bad), 1, "/c", []string{"127.0.0.1:1"}); err == nil {
			t.Errorf("a site of another shape rendered")
		}
	}
}
