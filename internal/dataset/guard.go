package dataset

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// guard is /dataset/'s own limit per client. Its routes are outside the
// API's per-IP limit (app.Deps.Unlimited: a file is one request that may
// last minutes, and mirrors fetch many at once), so the guard counts what
// matters here: two token buckets per address in this node's memory, one
// of requests (Config.Rate per second, a burst of ten seconds' worth) and
// one of bytes (Config.MiBRate MiB per second, likewise). A request is
// allowed while the address is in debt in neither; it then takes one
// request and owes the bytes it is about to send (a range's length or the
// file's; nothing for a 304, a HEAD or an error), which may take the bytes
// bucket below zero: one large download is never refused for its size,
// the address's next requests wait until the debt is paid back. A rate of
// 0 is no limit on that bucket. No Redis: each node guards its own
// bandwidth.
//
// An IPv6 client counts by its /64 (one subscriber's prefix: addresses
// within it cost nothing to change). The map is bounded: past maxGuarded
// addresses, those whose buckets are full again (idle) are forgotten,
// then all of them.
type guard struct {
	reqRate, reqBurst   float64 // per second; 0: no limit
	byteRate, byteBurst float64
	clientIP            func(*fiber.Ctx) netip.Addr
	now                 func() time.Duration // monotonic
	mu                  sync.Mutex
	buckets             map[netip.Addr]tokens
}

// tokens are one address's buckets at a time.
type tokens struct {
	req, bytes float64
	at         time.Duration
}

const maxGuarded = 1 << 16

// The reasons of a refusal (attestd_dataset_refused_total).
const (
	refusedRequests = "requests"
	refusedBytes    = "bytes"
)

var guardStart = time.Now()

func newGuard(rate, mibRate int, clientIP func(*fiber.Ctx) netip.Addr) *guard {
	if clientIP == nil {
		clientIP = func(c *fiber.Ctx) netip.Addr {
			a, _ := netip.ParseAddr(c.IP()) // parsed, never kept
			return a
		}
	}
	r, b := float64(max(rate, 0)), float64(max(mibRate, 0))*(1<<20)
	return &guard{reqRate: r, reqBurst: 10 * r, byteRate: b, byteBurst: 10 * b, clientIP: clientIP,
		now: func() time.Duration { return time.Since(guardStart) }, buckets: make(map[netip.Addr]tokens)}
}

// off reports whether the guard limits nothing.
func (g *guard) off() bool { return g.reqRate <= 0 && g.byteRate <= 0 }

// keyOf is the address a client counts as: IPv4 (an IPv4-mapped IPv6
// address included) whole, IPv6 by its /64.
func keyOf(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// refill is ip's buckets at now (full for an address not seen).
func (g *guard) refill(ip netip.Addr, now time.Duration) tokens {
	b, ok := g.buckets[ip]
	if !ok {
		if len(g.buckets) >= maxGuarded {
			g.forget(now)
		}
		return tokens{req: g.reqBurst, bytes: g.byteBurst, at: now}
	}
	dt := max(0, (now - b.at).Seconds())
	b.req = min(g.reqBurst, b.req+g.reqRate*dt)
	b.bytes = min(g.byteBurst, b.bytes+g.byteRate*dt)
	b.at = now
	return b
}

// allow takes a request for ip when the address is in debt in neither
// bucket; otherwise it says how long until it is, and which bucket
// refused (bytes when both did).
func (g *guard) allow(ip netip.Addr) (ok bool, wait time.Duration, reason string) {
	if g.off() {
		return true, 0, ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.refill(ip, g.now())
	if g.reqRate > 0 && b.req < 1 {
		wait, reason = seconds((1-b.req)/g.reqRate), refusedRequests
	}
	if g.byteRate > 0 && b.bytes < 0 {
		wait, reason = max(wait, seconds(-b.bytes/g.byteRate)), refusedBytes
	}
	if reason == "" && g.reqRate > 0 {
		b.req--
	}
	g.buckets[ip] = b
	return reason == "", wait, reason
}

// owe records n bytes that ip is being sent.
func (g *guard) owe(ip netip.Addr, n int64) {
	if g.byteRate <= 0 || n <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.refill(ip, g.now())
	b.bytes -= float64(n)
	g.buckets[ip] = b
}

// forget drops the idle addresses (both buckets full again), or all when
// too few are idle.
func (g *guard) forget(now time.Duration) {
	for ip, b := range g.buckets {
		dt := max(0, (now - b.at).Seconds())
		if b.req+g.reqRate*dt >= g.reqBurst && b.bytes+g.byteRate*dt >= g.byteBurst {
			delete(g.buckets, ip)
		}
	}
	if len(g.buckets) >= maxGuarded*3/4 {
		clear(g.buckets)
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// guardKey is where the guard leaves the request's address (c.Locals) for
// the handler that owes bytes.
type guardKey struct{}

// guarded is the first handler of each of /dataset/'s routes: it refuses
// a client over its limit (429 RATE_LIMITED with Retry-After), passes the
// others on, and counts every request by route and status. route names
// the route from a fixed set (index, manifest, file).
func (s *Server) guarded(route func(*fiber.Ctx) string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		label := route(c)
		err := s.admit(c)
		if err == nil {
			err = c.Next()
		}
		s.m.requests.WithLabelValues(label, strconv.Itoa(statusOf(c, err))).Inc()
		return err
	}
}

// admit applies the guard to c's client.
func (s *Server) admit(c *fiber.Ctx) error {
	g := s.guard
	if g.off() {
		return nil
	}
	ip := keyOf(g.clientIP(c))
	c.Locals(guardKey{}, ip)
	ok, wait, reason := g.allow(ip)
	if ok {
		return nil
	}
	s.m.refused.WithLabelValues(reason).Inc()
	secs := max(1, int64((wait+time.Second-1)/time.Second))
	retry := strconv.FormatInt(secs, 10)
	c.Set(fiber.HeaderRetryAfter, retry)
	if reason == refusedBytes {
		return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
			"the dataset allows %d MiB per second per client on each node (a burst of %d MiB) and this address has used its share; retry in %s s",
			int64(g.byteRate)>>20, int64(g.byteBurst)>>20, retry)
	}
	return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
		"the dataset allows %d requests per second per client on each node (a burst of %d); retry in %s s",
		int64(g.reqRate), int64(g.reqBurst), retry)
}

// owe records that c's client is being sent n bytes.
func (s *Server) owe(c *fiber.Ctx, n int64) {
	if ip, ok := c.Locals(guardKey{}).(netip.Addr); ok {
		s.guard.owe(ip, n)
	}
}

// statusOf is the status the answer to c goes out with: err's, when a
// handler failed (the app's error handler writes it), else the response's.
func statusOf(c *fiber.Ctx, err error) int {
	if err == nil {
		return c.Response().StatusCode()
	}
	if e, ok := apierror.As(err); ok {
		return e.Status
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return http.StatusInternalServerError
}
