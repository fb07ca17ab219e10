package translog

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// guard is the log's own limit on its checkpoint and tiles, which are
// outside the API's per-IP limit (they are immutable or seconds-fresh, and
// meant for CDNs and monitors that fetch hundreds at once): a token bucket
// per client IP in this node's memory, rate per second with a burst of
// ten seconds' worth. No Redis: a tile costs less to serve than a shared
// count would. The map is bounded: past maxGuarded addresses, those whose
// bucket is full again (idle) are forgotten, then all of them.
type guard struct {
	rate, burst float64
	clientIP    func(*fiber.Ctx) netip.Addr
	mu          sync.Mutex
	buckets     map[netip.Addr]bucket
}

type bucket struct {
	tokens float64
	at     time.Duration // monotonic
}

const maxGuarded = 1 << 16

func newGuard(rate int, clientIP func(*fiber.Ctx) netip.Addr) *guard {
	if clientIP == nil {
		clientIP = func(c *fiber.Ctx) netip.Addr {
			a, _ := netip.ParseAddr(c.IP())
			return a
		}
	}
	return &guard{rate: float64(rate), burst: float64(rate) * 10, clientIP: clientIP, buckets: make(map[netip.Addr]bucket)}
}

// allow takes a token for ip; when there is none, it says how long until
// there is.
func (g *guard) allow(ip netip.Addr, now time.Duration) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.buckets[ip]
	if !ok {
		if len(g.buckets) >= maxGuarded {
			g.forget(now)
		}
		b = bucket{tokens: g.burst, at: now}
	}
	b.tokens = min(g.burst, b.tokens+g.rate*(now-b.at).Seconds())
	b.at = now
	if b.tokens < 1 {
		g.buckets[ip] = b
		return false, time.Duration((1 - b.tokens) / g.rate * float64(time.Second))
	}
	b.tokens--
	g.buckets[ip] = b
	return true, 0
}

// forget drops the idle buckets (full again), or all when none is idle.
func (g *guard) forget(now time.Duration) {
	for ip, b := range g.buckets {
		if b.tokens+g.rate*(now-b.at).Seconds() >= g.burst {
			delete(g.buckets, ip)
		}
	}
	if len(g.buckets) >= maxGuarded*3/4 {
		clear(g.buckets)
	}
}

// handler answers 429 RATE_LIMITED (with Retry-After) to a client over
// its rate, and passes the others on.
func (g *guard) handler(c *fiber.Ctx) error {
	if g.rate <= 0 {
		return c.Next()
	}
	ok, wait := g.allow(g.clientIP(c), sinceStart())
	if ok {
		return c.Next()
	}
	secs := int64((wait + time.Second - 1) / time.Second)
	c.Set("Retry-After", strconv.FormatInt(secs, 10))
	return apierror.Write(c, http.StatusTooManyRequests, apierror.CodeRateLimited,
		"the log's tiles allow "+strconv.Itoa(int(g.rate))+" requests per second per client on each node; retry in "+strconv.FormatInt(secs, 10)+" s")
}

var start = time.Now()

func sinceStart() time.Duration { return time.Since(start) }
