package app_test

import (
	"strconv"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/testing/apptest"
)

// TestRateLimitAppliesToEveryRoute wires the limiter as `attestd serve`
// does and checks the 429 answer against the contract on several routes.
func TestRateLimitAppliesToEveryRoute(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 10})
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		l := env.NewLimiter(t, 4)
		d.Middleware = append(d.Middleware, l.Middleware())
		d.Degradations = append(d.Degradations, app.Degradation{Active: l.Degraded, Reason: "rate limit: local"})
	}})
	paths := []string{"/health", "/stats", "/attestations", "/nope"}
	for i, p := range paths {
		r := node.Get(t, p)
		if r.Status == 429 {
			t.Fatalf("request %d (%s) limited early", i+1, p)
		}
		if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(3-i) {
			t.Errorf("request %d: RateLimit-Remaining %q", i+1, got)
		}
	}
	for _, p := range []string{"/attestations", "/stats", "/unknown"} {
		r := node.Get(t, p)
		if r.Status != 429 || r.ErrorCode() != "RATE_LIMITED" {
			t.Fatalf("%s over the limit: %d %s", p, r.Status, r.Body)
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}
}
