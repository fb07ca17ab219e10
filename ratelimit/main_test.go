package ratelimit

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type node struct {
	lim  *Limiter
	rdb  *redis.Client // nil for a node on a cluster client
	app  *fiber.App
	logs *testenv.Output
}

// newNode starts a limiter with its own Redis client, as one API node would,
// and a Fiber app answering 200 behind its middleware.
func newNode(tb testing.TB, url string, cfg Config) *node {
	tb.Helper()
	opt, err := redis.ParseURL(url)
	testenv.Must(tb, err, "parse redis url")
	opt.MaxRetries = -1
	opt.DialTimeout = 200 * time.Millisecond
	rdb := redis.NewClient(opt)
	tb.Cleanup(func() { _ = rdb.Close() })
	n := newNodeOn(tb, rdb, cfg)
	n.rdb = rdb
	return n
}

// newNodeOn is newNode over a given client (a cluster client, say).
func newNodeOn(tb testing.TB, rdb redis.UniversalClient, cfg Config) *node {
	tb.Helper()
	if cfg.Timeout == 0 {
		// Tests that expect Redis decisions must not fall back because a
		// loaded machine (-race, other packages' tests) stalled a round trip.
		cfg.Timeout = 3 * time.Second
	}
	logs := &testenv.Output{}
	lim, err := New(rdb, cfg, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(logs, nil)))
	testenv.Must(tb, err, "new limiter")
	tb.Cleanup(lim.Close)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(lim.Middleware())
	app.Get("/*", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"ok": true}) })
	return &node{lim: lim, app: app, logs: logs}
}

// response is what a test reads of an HTTP answer.
type response struct {
	status int
	header map[string]string
	body   string
}

// do serves one GET through app as if it came from peer, with the given
// header name/value pairs (a name may repeat).
func do(tb testing.TB, app *fiber.App, peer string, hdr ...string) response {
	tb.Helper()
	var req fasthttp.Request
	req.SetRequestURI("/api/v1/stats")
	req.Header.SetMethod(fiber.MethodGet)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	ip := net.ParseIP(peer)
	if ip == nil {
		tb.Fatalf("bad peer %q", peer)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: ip, Port: 40000}, nil)
	app.Handler()(&ctx)
	r := response{status: ctx.Response.StatusCode(), header: map[string]string{}, body: string(ctx.Response.Body())}
	for _, h := range []string{HeaderLimit, HeaderRemaining, HeaderReset, HeaderRetryAfter} {
		if v := ctx.Response.Header.Peek(h); v != nil {
			r.header[h] = string(v)
		}
	}
	return r
}

// serverTime is the Redis server clock in µs.
func serverTime(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := rdb.Time(ctx).Result()
	testenv.Must(tb, err, "redis TIME")
	return t.UnixMicro()
}

// metricValue reads a counter or gauge.
func metricValue(tb testing.TB, c prometheus.Metric) float64 {
	tb.Helper()
	var m dto.Metric
	testenv.Must(tb, c.Write(&m), "read metric")
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	tb.Fatalf("metric is neither counter nor gauge")
	return 0
}

func newDTOMetric() *dto.Metric { return &dto.Metric{} }
