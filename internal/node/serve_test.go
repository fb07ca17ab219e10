package node

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
)

// TestServeFromASettingsLiteral builds a whole API node from a
// settings.Settings written out here: no environment is read and no
// process is started. The node answers on the address it bound, its
// features as the settings say (the rate limit's headers, /health, the
// contract, an unknown attestation's 404 in the error envelope), and
// stops when its context ends.
func TestServeFromASettingsLiteral(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Database(t)
	redisURL, prefix := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, dbURL, store.Options{MaxConns: 2})
	testenv.Must(t, err, "open store")
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	st.Close()

	s := settings.Settings{
		Role: settings.Serve,
		Common: config.Config{DatabaseURL: dbURL, RedisURL: redisURL, RedisPrefix: prefix, HTTPAddr: "127.0.0.1:0",
			DBMaxConns: 4, ShutdownTimeout: 5 * time.Second},
		RateLimit: ratelimit.Config{Limit: 7, Window: time.Minute},
	}
	serveCtx, stop := context.WithCancel(ctx)
	bound := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(serveCtx, s, apptest.Logger(), ServeOptions{Listening: func(a net.Addr) { bound <- a }})
	}()
	var base string
	select {
	case a := <-bound:
		base = "http://" + a.String() + "/api/v1"
	case err := <-done:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-ctx.Done():
		t.Fatal("the node did not listen within a minute")
	}

	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(base + path)
		testenv.Must(t, err, "GET %s", path)
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return res, string(b)
	}
	res, body := get("/health")
	var health struct{ Status string }
	testenv.Must(t, json.Unmarshal([]byte(body), &health), "health %s", body)
	if res.StatusCode != http.StatusOK || health.Status == "" {
		t.Errorf("/health: %d %s", res.StatusCode, body)
	}
	if got := res.Header.Get("RateLimit-Limit"); got != "7" {
		t.Errorf("RateLimit-Limit %q: want the literal's limit, 7 (headers %v)", got, res.Header)
	}
	if res, body := get("/openapi.json"); res.StatusCode != http.StatusOK || !strings.Contains(body, `"openapi"`) {
		t.Errorf("/openapi.json: %d %.200s", res.StatusCode, body)
	}
	missing := "/attestations/" + strings.Repeat("1", 32)
	if res, body := get(missing); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code"`) {
		t.Errorf("%s: %d %.300s, want 404 in the error envelope", missing, res.StatusCode, body)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after its context ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return within 30 s of its context ending")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/api/v1"), time.Second); err == nil {
		c.Close()
		t.Error("the node's address still accepts connections after Serve returned")
	}
}
