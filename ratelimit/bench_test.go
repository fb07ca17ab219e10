package ratelimit

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
)

// BenchmarkAllow measures decisions against the shared Redis from many
// goroutines with distinct keys: batched (the default) against one round
// trip per decision (MaxBatch 1, many pipelines).
func BenchmarkAllow(b *testing.B) {
	url, prefix := testenv.Redis(b)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"batched", Config{}},
		{"one-per-round-trip", Config{MaxBatch: 1, Pipelines: 128}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Limit, cfg.Window, cfg.KeyPrefix = 1<<30, time.Minute, prefix+bc.name+":"
			n := newNode(b, url, cfg)
			var next atomic.Uint64
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := strconv.FormatUint(next.Add(1)%10000, 10)
					if d, err := n.lim.Allow(context.Background(), key); err != nil || !d.Allowed || d.Local {
						b.Errorf("Allow: %+v %v", d, err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkLocalWindow(b *testing.B) {
	w := newLocalWindow(100, time.Minute, time.Now)
	var next atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.allow(strconv.FormatUint(next.Add(1)%10000, 10))
		}
	})
}

func BenchmarkResolveForwardedFor(b *testing.B) {
	r := mustResolver(b, "10.0.0.0/8, 192.168.0.0/16", "")
	app := fiber.New()
	var sink netip.Addr
	app.Use(func(c *fiber.Ctx) error { sink = r.ClientIP(c); return nil })
	h := app.Handler()
	var req fasthttp.Request
	req.SetRequestURI("/")
	req.Header.Set("X-Forwarded-For", "1.2.3.4, 203.0.113.9, 10.1.1.1, 192.168.7.7")
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h(&ctx)
	}
	if sink != netip.MustParseAddr("203.0.113.9") {
		b.Fatal(sink)
	}
}

// BenchmarkMiddleware is the whole per-request cost in Fiber (no network
// between client and server), limiter on against off.
func BenchmarkMiddleware(b *testing.B) {
	url, prefix := testenv.Redis(b)
	trusted, _ := ParsePrefixes("127.0.0.1")
	for _, limit := range []int{0, 1 << 30} {
		name := "off"
		if limit > 0 {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			n := newNode(b, url, Config{Limit: limit, Window: time.Minute, KeyPrefix: prefix + name + ":", TrustedProxies: trusted})
			h := n.app.Handler()
			var next atomic.Uint64
			b.SetParallelism(32)
			b.ReportAllocs()
			cpu0, redis0 := processCPU(), redisCPU(b, n.rdb)
			b.ResetTimer()
			defer func() {
				b.StopTimer()
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(redisCPU(b, n.rdb)-redis0)/float64(b.N), "redis-cpu-ns/op")
			}()
			b.RunParallel(func(pb *testing.PB) {
				var req fasthttp.Request
				req.SetRequestURI("/api/v1/stats")
				var ctx fasthttp.RequestCtx
				for pb.Next() {
					i := next.Add(1)
					req.Header.Set("X-Forwarded-For", "100.64."+strconv.Itoa(int(i>>8&255))+"."+strconv.Itoa(int(i&255)))
					ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
					h(&ctx)
					if ctx.Response.StatusCode() != 200 {
						b.Errorf("status %d", ctx.Response.StatusCode())
						return
					}
				}
			})
		})
	}
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time the Redis server used so far.
func redisCPU(tb testing.TB, rdb *redis.Client) time.Duration {
	d, err := testenv.RedisCPU(context.Background(), rdb)
	testenv.Must(tb, err, "redis cpu")
	return d
}
