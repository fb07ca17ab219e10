package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthURL(t *testing.T) {
	for _, tc := range []struct {
		target, addr, env, want string
	}{
		{"", "", "", "http://127.0.0.1:8080/api/v1/health"},
		{"", "", "0.0.0.0:8081", "http://127.0.0.1:8081/api/v1/health"},
		{"", "", ":8082", "http://127.0.0.1:8082/api/v1/health"},
		{"", "[::]:8083", "0.0.0.0:1", "http://127.0.0.1:8083/api/v1/health"},
		{"", "10.0.0.5:8080", "", "http://10.0.0.5:8080/api/v1/health"},
		{"", "[::1]:8080", "", "http://[::1]:8080/api/v1/health"},
		{"http://127.0.0.1:9091/metrics", "x", "y", "http://127.0.0.1:9091/metrics"},
	} {
		got, err := healthURL(tc.target, tc.addr, tc.env)
		if err != nil || got != tc.want {
			t.Errorf("healthURL(%q, %q, %q) = %q, %v; want %q", tc.target, tc.addr, tc.env, got, err, tc.want)
		}
	}
	for _, bad := range [][3]string{{"ftp://x/", "", ""}, {"/api/v1/health", "", ""}, {"", "8080", ""}, {"", "host:", ""}} {
		if got, err := healthURL(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("healthURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestRoleHealthURL(t *testing.T) {
	env := map[string]string{"ATTESTD_HTTP_ADDR": "0.0.0.0:8081", "ATTESTD_WORKER_METRICS_ADDR": "0.0.0.0:9192"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct{ role, target, addr, want string }{
		{"serve", "", "", "http://127.0.0.1:8081/api/v1/health"},
		{"", "", "", "http://127.0.0.1:8081/api/v1/health"},
		{"index", "", "", "http://127.0.0.1:9091/health"},
		{"index", "", "10.0.0.7:9091", "http://10.0.0.7:9091/health"},
		{"worker", "", "", "http://127.0.0.1:9192/health"},
		{"worker", "http://127.0.0.1:1/api/v1/health", "", "http://127.0.0.1:1/api/v1/health"},
	} {
		got, err := roleHealthURL(tc.role, tc.target, tc.addr, getenv)
		if err != nil || got != tc.want {
			t.Errorf("roleHealthURL(%q, %q, %q) = %q, %v; want %q", tc.role, tc.target, tc.addr, got, err, tc.want)
		}
	}
	if got, err := roleHealthURL("indexer", "", "", getenv); err == nil {
		t.Errorf("unknown role: %q, want an error", got)
	}
}

// TestHealthcheck: 200 passes; 503, a redirect, a refused connection and
// a server slower than the deadline fail.
func TestHealthcheck(t *testing.T) {
	status := make(chan int, 1)
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-block
			return
		}
		if r.URL.Path != "/api/v1/health" {
			http.NotFound(w, r)
			return
		}
		code := <-status
		if code == http.StatusFound {
			w.Header().Set("Location", "/api/v1/health")
		}
		w.WriteHeader(code)
		w.Write([]byte(`{"data":{"status":"x"}}`))
	}))
	defer srv.Close()
	defer close(block)
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	status <- http.StatusOK
	if err := runHealthcheck(ctx, []string{"-q", "-addr", addr}); err != nil {
		t.Fatalf("200: %v", err)
	}
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusFound, http.StatusInternalServerError} {
		status <- code
		if err := runHealthcheck(ctx, []string{"-q", "-addr", addr}); err == nil || !strings.Contains(err.Error(), http.StatusText(code)) {
			t.Errorf("%d: %v, want a failure naming it", code, err)
		}
	}
	start := time.Now()
	if err := runHealthcheck(ctx, []string{"-q", "-timeout", "300ms", "-url", srv.URL + "/slow"}); err == nil {
		t.Errorf("a server past the deadline passed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the deadline did not hold: %v", d)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	if err := runHealthcheck(ctx, []string{"-q", "-addr", deadAddr}); err == nil {
		t.Errorf("a refused connection passed")
	}
}
