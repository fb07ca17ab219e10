package ratelimit

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
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

// ConfigFromEnv reads the configuration with getenv:
//
//	ATTESTD_RATE_LIMIT       requests per window per client IP (default 100; 0 disables limiting)
//	ATTESTD_RATE_WINDOW      sliding window, a Go duration (default 60s)
//	ATTESTD_RATE_REDIS_TIMEOUT  bound of one Redis round trip before the local window decides (default 75ms)
//	ATTESTD_RATE_ALLOWLIST   comma-separated CIDRs or IPs never limited (default none)
//	ATTESTD_TRUSTED_PROXIES  comma-separated CIDRs or IPs of proxies whose header is believed (default none)
//	ATTESTD_PROXY_HEADER     X-Forwarded-For or X-Real-IP (default X-Forwarded-For)
//	ATTESTD_REDIS_PREFIX     prefix of Redis keys (default attestd:); keys are <prefix>ratelimit:<client>
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{Limit: DefaultLimit, Window: DefaultWindow, ProxyHeader: DefaultProxyHeader, KeyPrefix: DefaultKeyPrefix}
	var errs []error
	if v := get("ATTESTD_RATE_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("ATTESTD_RATE_LIMIT: want a whole number >= 0 (0 disables limiting), got %q", v))
		} else {
			c.Limit = n
		}
	}
	if v := get("ATTESTD_RATE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			errs = append(errs, fmt.Errorf("ATTESTD_RATE_WINDOW: want a Go duration of at least 1ms such as 60s or 1m, got %q", v))
		} else {
			c.Window = d
		}
	}
	if v := get("ATTESTD_RATE_REDIS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Minute {
			errs = append(errs, fmt.Errorf("ATTESTD_RATE_REDIS_TIMEOUT: want a Go duration from 1ms to 1m such as 75ms, got %q", v))
		} else {
			c.Timeout = d
		}
	}
	var err error
	if c.Allowlist, err = ParsePrefixes(get("ATTESTD_RATE_ALLOWLIST")); err != nil {
		errs = append(errs, fmt.Errorf("ATTESTD_RATE_ALLOWLIST: %w", err))
	}
	if c.TrustedProxies, err = ParsePrefixes(get("ATTESTD_TRUSTED_PROXIES")); err != nil {
		errs = append(errs, fmt.Errorf("ATTESTD_TRUSTED_PROXIES: %w", err))
	}
	if v := get("ATTESTD_PROXY_HEADER"); v != "" {
		h, err := canonicalProxyHeader(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("ATTESTD_PROXY_HEADER: want X-Forwarded-For or X-Real-IP, got %q", v))
		} else {
			c.ProxyHeader = h
		}
	}
	if v := get("ATTESTD_REDIS_PREFIX"); v != "" {
		c.KeyPrefix = v + "ratelimit:"
	}
	return c, errors.Join(errs...)
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

func containsAddr(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
