package config

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Vars lists the variables FromEnv reads: the ones every attestd process
// shares.
var Vars = []Var{
	{"DATABASE_URL", "(make run / tests: a throwaway server)", "PostgreSQL URL"},
	{"REDIS_URL", "(make run / tests: a throwaway server)", "Redis URL (redis://host:port/db)"},
	{"ATTESTD_REDIS_CLUSTER", "off", "on: REDIS_URL names Redis Cluster seed nodes"},
	{"ATTESTD_CACHE_REDIS_URL", "(REDIS_URL)", "a Redis of its own for the read cache (of the same kind as REDIS_URL), so that a full cache evicts only cache entries: run it with maxmemory and maxmemory-policy volatile-lru, and REDIS_URL's with noeviction (docs/operations.md); every process that serves or writes the index sets the same"},
	{"ATTESTD_HTTP_ADDR", "127.0.0.1:8080", "public API listener"},
	{"ATTESTD_PUBLIC_URL", "(http://ATTESTD_HTTP_ADDR on loopback; none beyond)", "the origin clients use (scheme://host[:port]): sign-in domain, x402 resource URLs, Secure cookies"},
	{"ATTESTD_METRICS_ADDR", "127.0.0.1:9090", "internal Prometheus /metrics listener; empty disables it"},
	{"ATTESTD_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"ATTESTD_LOG_FORMAT", "auto", "auto (text on a terminal, JSON otherwise), json or text"},
	{"ATTESTD_ACCESS_LOG", "errors", "errors (5xx and slow requests) or all"},
	{"ATTESTD_REDIS_PREFIX", "attestd:", "prefix of every Redis key and channel"},
	{"ATTESTD_CACHE", "on", "off bypasses both cache layers"},
	{"ATTESTD_CACHE_MAX_MB", "64", "what the read cache may keep in Redis, MiB, shared by every node (a quarter for answers kept 30 s at most, the rest for those kept up to 24 h); past it the cache stops writing and says full (attestd_cache_full); 0: unbounded, only with ATTESTD_CACHE_REDIS_URL (a server of its own that evicts)"},
	{"ATTESTD_CACHE_LOCAL_MB", "32", "in-process cache budget per kind, MiB; 0 disables the in-process layer"},
	{"ATTESTD_DB_MAX_CONNS", "16", "PostgreSQL pool size per process"},
	{"ATTESTD_SHUTDOWN_TIMEOUT", "10s", "grace for in-flight requests on SIGTERM"},
	{"ATTESTD_DRAIN_TIMEOUT", "5s", "on SIGTERM, how long a node keeps serving with /health 503 draining before it stops (attestd local: 0); a second signal ends it"},
	{"ATTESTD_REUSE_PORT", "off", "on: bind ATTESTD_HTTP_ADDR with SO_REUSEPORT, so a replacement can start on the address of a node that is draining"},
	{"ATTESTD_MAX_CONNS_PER_IP", "256", "open connections one client IP (IPv6: /64) may hold; trusted proxies are exempt; 0: no cap"},
	{"ATTESTD_PPROF", "off", "on serves Go's profiler at /debug/pprof/ on the metrics listener"},
}

// Config is the common configuration of attestd processes.
type Config struct {
	DatabaseURL     string
	RedisURL        string
	CacheRedisURL   string // "": the cache shares RedisURL
	RedisCluster    bool
	HTTPAddr        string
	PublicURL       Origin // ATTESTD_PUBLIC_URL; zero when unset (see PublicOrigin)
	MetricsAddr     string
	LogLevel        slog.Level
	LogFormat       string // auto, json or text (see NewLogHandler)
	AccessLogAll    bool
	RedisPrefix     string
	CacheDisabled   bool
	CacheMaxBytes   int64 // in Redis; -1: unbounded
	LocalBytes      int   // per kind; -1 disables
	DBMaxConns      int32
	ShutdownTimeout time.Duration
	DrainTimeout    time.Duration
	ReusePort       bool
	MaxConnsPerIP   int
	Pprof           bool
}

// FromEnv reads the configuration with getenv (the process environment
// when nil). ATTESTD_METRICS_ADDR set to the empty string disables the
// metrics listener; with a getenv function, empty means unset.
func FromEnv(getenv func(string) string) (Config, error) {
	e := NewEnv(getenv)
	c := Config{
		DatabaseURL:     e.String("DATABASE_URL", ""),
		RedisURL:        e.String("REDIS_URL", ""),
		CacheRedisURL:   e.String("ATTESTD_CACHE_REDIS_URL", ""),
		RedisCluster:    e.Switch("ATTESTD_REDIS_CLUSTER", "off", "on"),
		HTTPAddr:        e.String("ATTESTD_HTTP_ADDR", "127.0.0.1:8080"),
		MetricsAddr:     "127.0.0.1:9090",
		AccessLogAll:    e.Switch("ATTESTD_ACCESS_LOG", "errors", "all"),
		RedisPrefix:     e.String("ATTESTD_REDIS_PREFIX", "attestd:"),
		CacheDisabled:   e.Switch("ATTESTD_CACHE", "on", "off"),
		DBMaxConns:      int32(e.Int("ATTESTD_DB_MAX_CONNS", 16, 1, 1000)),
		ShutdownTimeout: e.Duration("ATTESTD_SHUTDOWN_TIMEOUT", 10*time.Second, 0, time.Hour),
		DrainTimeout:    e.Duration("ATTESTD_DRAIN_TIMEOUT", 5*time.Second, 0, time.Hour),
		ReusePort:       e.Switch("ATTESTD_REUSE_PORT", "off", "on"),
		MaxConnsPerIP:   e.Int("ATTESTD_MAX_CONNS_PER_IP", 256, 0, 1_000_000),
		Pprof:           e.Switch("ATTESTD_PPROF", "off", "on"),
		LogFormat:       e.OneOf("ATTESTD_LOG_FORMAT", LogAuto, LogAuto, LogJSON, LogText),
	}
	if v, set := e.Lookup("ATTESTD_METRICS_ADDR"); set {
		c.MetricsAddr = v
	}
	if v := e.String("ATTESTD_PUBLIC_URL", ""); v != "" {
		o, err := ParseOrigin(v)
		if err != nil {
			e.Fail("ATTESTD_PUBLIC_URL", "%v", err)
		}
		c.PublicURL = o
	}
	if v := e.String("ATTESTD_LOG_LEVEL", "info"); c.LogLevel.UnmarshalText([]byte(v)) != nil {
		e.Fail("ATTESTD_LOG_LEVEL", "want debug, info, warn or error, got %q", v)
	}
	c.CacheMaxBytes = int64(e.Int("ATTESTD_CACHE_MAX_MB", 64, 0, 1<<24)) << 20
	if c.CacheMaxBytes == 0 {
		c.CacheMaxBytes = -1
		if c.CacheRedisURL == "" {
			// Unbounded in the server that holds limits, sessions, queues
			// and payment claims: readers could fill it.
			e.Fail("ATTESTD_CACHE_MAX_MB", "0 (unbounded) needs ATTESTD_CACHE_REDIS_URL: a cache sharing REDIS_URL's server must be bounded")
		}
	}
	c.LocalBytes = e.Int("ATTESTD_CACHE_LOCAL_MB", 32, 0, 1<<20) << 20
	if c.LocalBytes == 0 {
		c.LocalBytes = -1
	}
	return c, e.Err()
}

// RequireStores fails when the database or Redis URL is missing.
func (c Config) RequireStores() error {
	var missing []string
	if c.DatabaseURL == "" {
		missing = append(missing, "DATABASE_URL")
	}
	if c.RedisURL == "" {
		missing = append(missing, "REDIS_URL")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not set (make run starts local servers for you)", strings.Join(missing, " and "))
	}
	return nil
}
