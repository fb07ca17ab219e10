package ratelimit

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
)

// Defaults of the configuration.
const (
	DefaultLimit       = 100
	DefaultWindow      = time.Minute
	DefaultProxyHeader = "X-Forwarded-For"
	DefaultKeyPrefix   = "attestd:ratelimit:"
	DefaultTimeout     = 75 * time.Millisecond
	DefaultMaxBatch    = 256
	DefaultPipelines   = 2
	DefaultProbeEvery  = 500 * time.Millisecond
)

// Config configures a Limiter. The zero values of the optional fields
// (below KeyPrefix) mean "use the default".
type Config struct {
	// Limit is the number of requests one client may make in any Window.
	// 0 disables limiting altogether (every request passes, no headers are
	// set): meant for benchmarks, never for production.
	Limit int
	// Window is the length of the sliding window.
	Window time.Duration
	// TrustedProxies are the peers whose ProxyHeader is believed.
	TrustedProxies []netip.Prefix
	// ProxyHeader is X-Forwarded-For (walked right to left) or X-Real-IP.
	ProxyHeader string
	// Allowlist are client networks that are never limited.
	Allowlist []netip.Prefix
	// KeyPrefix is put before every Redis key.
	KeyPrefix string

	// Timeout bounds one Redis round trip (a watchdog checks every
	// Timeout/4, whatever the go-redis client's own timeouts); beyond it
	// the decisions are made by the local window and the limiter goes
	// degraded until Redis answers a probe.
	Timeout time.Duration
	// MaxBatch is the most decisions sent in one round trip.
	MaxBatch int
	// Pipelines is the number of round trips that may be in flight at once.
	// A decision is sent at once when one of them is idle; decisions that
	// arrive while all are busy are batched into the next round trip.
	Pipelines int
	// SingleKeyScripts sends one single-key script call per decision (in
	// a pipeline) even to a plain *redis.Client, which otherwise gets one
	// multi-key call per batch. Set it when the address is a proxy that
	// shards keys. (A *redis.ClusterClient always gets single-key calls.)
	SingleKeyScripts bool
	// ProbeEvery is how often a degraded limiter checks whether Redis is back.
	ProbeEvery time.Duration
	// Now is the clock of the local (fallback) window; default time.Now.
	// The shared window always uses the Redis server clock.
	Now func() time.Time
	// Resolver finds a request's client IP (nil: one made from
	// TrustedProxies and ProxyHeader). A node makes one and shares it
	// with the features that resolve clients as the limiter does.
	Resolver *IPResolver
}

// withDefaults fills the optional fields and checks the others.
func (c Config) withDefaults() (Config, error) {
	if c.Limit < 0 {
		return c, fmt.Errorf("rate limit: limit must not be negative, got %d", c.Limit)
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Window < time.Millisecond {
		return c, fmt.Errorf("rate limit: window must be at least 1ms, got %s", c.Window)
	}
	if c.ProxyHeader == "" {
		c.ProxyHeader = DefaultProxyHeader
	}
	h, err := canonicalProxyHeader(c.ProxyHeader)
	if err != nil {
		return c, err
	}
	c.ProxyHeader = h
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Pipelines <= 0 {
		c.Pipelines = DefaultPipelines
	}
	if c.ProbeEvery <= 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.TrustedProxies = normalizePrefixes(c.TrustedProxies)
	c.Allowlist = normalizePrefixes(c.Allowlist)
	return c, nil
}

func canonicalProxyHeader(h string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(h)) {
	case "x-forwarded-for":
		return "X-Forwarded-For", nil
	case "x-real-ip":
		return "X-Real-IP", nil
	}
	return "", fmt.Errorf("rate limit: proxy header must be X-Forwarded-For or X-Real-IP, got %q", h)
}

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_RATE_LIMIT", Default: "100", Help: "requests per client IP in any window; 0 disables limiting"},
	{Name: "ATTESTD_RATE_WINDOW", Default: "60s", Help: "the sliding window"},
	{Name: "ATTESTD_RATE_REDIS_TIMEOUT", Default: "75ms", Help: "longest wait for one Redis decision before this node's own window decides"},
	{Name: "ATTESTD_RATE_ALLOWLIST", Default: "(none)", Help: "comma-separated CIDRs never limited"},
	{Name: "ATTESTD_TRUSTED_PROXIES", Default: "(none)", Help: "comma-separated CIDRs or IPs of the load balancers whose proxy header is believed"},
	{Name: "ATTESTD_PROXY_HEADER", Default: "X-Forwarded-For", Help: "X-Forwarded-For (walked right to left) or X-Real-IP"},
}

// ConfigFromEnv reads Vars with getenv, and ATTESTD_REDIS_PREFIX (keys are
// <prefix>ratelimit:<client>).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		Limit:   e.Int("ATTESTD_RATE_LIMIT", DefaultLimit, 0, 1<<30),
		Window:  e.Duration("ATTESTD_RATE_WINDOW", DefaultWindow, time.Millisecond, 24*time.Hour),
		Timeout: e.Duration("ATTESTD_RATE_REDIS_TIMEOUT", 0, time.Millisecond, time.Minute),
	}
	var err error
	if c.Allowlist, err = ParsePrefixes(e.String("ATTESTD_RATE_ALLOWLIST", "")); err != nil {
		e.Fail("ATTESTD_RATE_ALLOWLIST", "%v", err)
	}
	if c.TrustedProxies, err = ParsePrefixes(e.String("ATTESTD_TRUSTED_PROXIES", "")); err != nil {
		e.Fail("ATTESTD_TRUSTED_PROXIES", "%v", err)
	}
	c.ProxyHeader = e.String("ATTESTD_PROXY_HEADER", DefaultProxyHeader)
	if c.ProxyHeader, err = canonicalProxyHeader(c.ProxyHeader); err != nil {
		e.Fail("ATTESTD_PROXY_HEADER", "want X-Forwarded-For or X-Real-IP, got %q", e.String("ATTESTD_PROXY_HEADER", ""))
		c.ProxyHeader = DefaultProxyHeader
	}
	c.KeyPrefix = e.String("ATTESTD_REDIS_PREFIX", "attestd:") + "ratelimit:"
	return c, e.Err()
}

// ParsePrefixes parses a comma-separated list of CIDRs or bare IPs (a bare
// IP is a /32 or /128). IPv4-mapped IPv6 entries become IPv4. Empty
// elements are skipped.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(f, "/") {
			var err error
			if p, err = netip.ParsePrefix(f); err != nil {
				return nil, fmt.Errorf("bad CIDR %q: %w", f, err)
			}
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("bad IP %q: %w", f, err)
			}
			a = a.WithZone("")
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, normalizePrefix(p))
	}
	return out, nil
}

func normalizePrefixes(ps []netip.Prefix) []netip.Prefix {
	if len(ps) == 0 {
		return nil
	}
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		if p.IsValid() {
			out = append(out, normalizePrefix(p))
		}
	}
	return out
}

// normalizePrefix masks p and turns an IPv4-mapped IPv6 prefix of at least
// 96 bits into the IPv4 prefix it covers, so it matches unmapped addresses.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr().WithZone("")
	if a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
	}
	return netip.PrefixFrom(a, p.Bits()).Masked()
}

// Contains returns a function reporting whether an address is in one of
// ps (IPv4-mapped addresses count as IPv4).
func Contains(ps []netip.Prefix) func(netip.Addr) bool {
	ps = normalizePrefixes(ps)
	return func(a netip.Addr) bool { return containsAddr(ps, a.Unmap()) }
}

func containsAddr(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
