package node

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// TestServeRefusesOriginlessFeaturesBeyondLoopback: a node listening
// beyond loopback without ATTESTD_PUBLIC_URL serves the API, but its web
// console and pay per request answer 503 naming the variable (nothing is
// bound here: the node's features are built as serve builds them and asked
// in process). On loopback, or with the variable, they are on, and the
// origin is the configured one.
func TestServeRefusesOriginlessFeaturesBeyondLoopback(t *testing.T) {
	redisURL, prefix := testenv.Redis(t)
	for _, c := range []struct {
		name, addr, public string
		off                bool
		domain             string
	}{
		{"beyond loopback", "0.0.0.0:8080", "", true, ""},
		{"beyond loopback, any interface", ":8080", "", true, ""},
		{"beyond loopback with the variable", "0.0.0.0:8080", "https://api.example.com", false, "api.example.com"},
		{"loopback", "127.0.0.1:8080", "", false, "127.0.0.1:8080"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"ATTESTD_HTTP_ADDR": c.addr, "ATTESTD_PUBLIC_URL": c.public,
				"DATABASE_URL": "postgres://127.0.0.1:9/none", "REDIS_URL": redisURL, "ATTESTD_REDIS_PREFIX": prefix,
				"ATTESTD_X402_PAY_TO": "11111111111111111111111111111112", "ATTESTD_X402_FACILITATOR_URL": "http://127.0.0.1:9/facilitator"}
			s, err := settings.Load(settings.Serve, func(k string) string { return env[k] })
			testenv.Must(t, err, "settings")
			api := originNode(t, s)
			for _, path := range []string{"/", "/assets/app.js", "/api/v1/auth/nonce", "/api/v1/premium/paid"} {
				status, body := ask(t, api, path)
				if off := status == http.StatusServiceUnavailable && strings.Contains(body, "ATTESTD_PUBLIC_URL") && strings.Contains(body, `"code"`); off != c.off {
					t.Errorf("%s: %d %.300s (want off=%v)", path, status, body, c.off)
				}
				if path == "/api/v1/auth/nonce" && !c.off && !strings.Contains(body, `"domain":"`+c.domain+`"`) {
					t.Errorf("nonce %s, want domain %q", body, c.domain)
				}
			}
		})
	}
}

// originNode builds the web application and the pay-per-request handler as
// serve does, on an API without a database.
func originNode(t *testing.T, s settings.Settings) *app.API {
	t.Helper()
	cfg := s.Common
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{Lazy: true})
	testenv.Must(t, err, "store")
	t.Cleanup(st.Close)
	rdb := apptest.NewRedis(t, cfg.RedisURL)
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: cfg.RedisPrefix, Disabled: true, Logger: apptest.Logger()})
	testenv.Must(t, err, "cache")
	t.Cleanup(c.Close)
	resolver, err := ratelimit.NewIPResolver(s.RateLimit.TrustedProxies, s.RateLimit.ProxyHeader)
	testenv.Must(t, err, "resolver")
	n := &node{s: s, cfg: cfg, log: apptest.Logger(), store: st, redis: rdb, cache: c, reg: prometheus.NewRegistry(), resolver: resolver}
	api := app.New(app.Deps{Store: st, Cache: c, Logger: n.log})
	site, err := n.web()
	testenv.Must(t, err, "web")
	site.Routes(api)
	pay, err := n.payPerRequest(ctx, api)
	testenv.Must(t, err, "pay per request")
	if pay == nil {
		t.Fatal("pay per request off with ATTESTD_X402_PAY_TO set")
	}
	// Whatever the handler does when it is on (ask the facilitator, which
	// is not there), it does not name the variable.
	api.Route(http.MethodGet, "/premium/paid", pay, func(*fiber.Ctx) error { return nil })
	t.Cleanup(n.close)
	return api
}

func ask(t *testing.T, api *app.API, path string) (int, string) {
	t.Helper()
	res, err := api.Fiber().Test(httptest.NewRequest(http.MethodGet, path, nil), 10_000)
	testenv.Must(t, err, "GET %s", path)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
