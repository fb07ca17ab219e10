package config

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Var documents one environment variable.
type Var struct {
	Name, Default, Help string
}

// Vars lists the variables this package reads.
var Vars = []Var{
	{"DATABASE_URL", "(make run / tests: a throwaway server)", "PostgreSQL URL"},
	{"REDIS_URL", "(make run / tests: a throwaway server)", "Redis URL (redis://host:port/db)"},
	{"ATTESTD_REDIS_CLUSTER", "off", "on: REDIS_URL names Redis Cluster seed nodes (redis://host:port?addr=host2:port2&addr=...)"},
	{"ATTESTD_HTTP_ADDR", "127.0.0.1:8080", "public API listener"},
	{"ATTESTD_METRICS_ADDR", "127.0.0.1:9090", "internal Prometheus /metrics listener; empty disables it"},
	{"ATTESTD_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"ATTESTD_ACCESS_LOG", "errors", "errors (5xx and slow requests) or all"},
	{"ATTESTD_REDIS_PREFIX", "attestd:", "prefix of every Redis key and channel"},
	{"ATTESTD_CACHE", "on", "off bypasses both cache layers (to measure uncached reads)"},
	{"ATTESTD_CACHE_LOCAL_MB", "32", "in-process cache budget per kind (immutable, indexed) in MiB; 0 disables the in-process layer"},
	{"ATTESTD_DB_MAX_CONNS", "16", "Postgres pool size per process"},
	{"ATTESTD_SHUTDOWN_TIMEOUT", "10s", "grace period for in-flight requests on SIGTERM"},
}

// Config is the common configuration of attestd processes.
type Config struct {
	DatabaseURL     string
	RedisURL        string
	RedisCluster    bool
	HTTPAddr        string
	MetricsAddr     string
	LogLevel        slog.Level
	AccessLogAll    bool
	RedisPrefix     string
	CacheDisabled   bool
	LocalBytes      int // per kind; -1 disables
	DBMaxConns      int32
	ShutdownTimeout time.Duration
}

// FromEnv reads the configuration with getenv (the process environment
// when nil). ATTESTD_METRICS_ADDR set to the empty string disables the
// metrics listener; with a getenv function, empty means unset.
func FromEnv(getenv func(string) string) (Config, error) {
	lookup := func(name string) (string, bool) { v := getenv(name); return v, v != "" }
	if getenv == nil {
		getenv, lookup = os.Getenv, os.LookupEnv
	}
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		DatabaseURL: get("DATABASE_URL", ""),
		RedisURL:    get("REDIS_URL", ""),
		HTTPAddr:    get("ATTESTD_HTTP_ADDR", "127.0.0.1:8080"),
		RedisPrefix: get("ATTESTD_REDIS_PREFIX", "attestd:"),
	}
	if v, set := lookup("ATTESTD_METRICS_ADDR"); set {
		c.MetricsAddr = strings.TrimSpace(v)
	} else {
		c.MetricsAddr = "127.0.0.1:9090"
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("ATTESTD_LOG_LEVEL", "info"))); err != nil {
		return c, fmt.Errorf("ATTESTD_LOG_LEVEL: %w", err)
	}
	// Two-valued switches: the default value, and the one that sets the flag.
	for _, sw := range []struct {
		name, def, set string
		flag           *bool
	}{
		{"ATTESTD_ACCESS_LOG", "errors", "all", &c.AccessLogAll},
		{"ATTESTD_REDIS_CLUSTER", "off", "on", &c.RedisCluster},
		{"ATTESTD_CACHE", "on", "off", &c.CacheDisabled},
	} {
		switch v := get(sw.name, sw.def); v {
		case sw.def:
		case sw.set:
			*sw.flag = true
		default:
			return c, fmt.Errorf("%s: want %s or %s, got %q", sw.name, sw.def, sw.set, v)
		}
	}
	n, err := strconv.Atoi(get("ATTESTD_CACHE_LOCAL_MB", "32"))
	if err != nil || n < 0 || n > 1<<20 {
		return c, fmt.Errorf("ATTESTD_CACHE_LOCAL_MB: want a whole number of MiB >= 0, got %q", getenv("ATTESTD_CACHE_LOCAL_MB"))
	}
	c.LocalBytes = n << 20
	if n == 0 {
		c.LocalBytes = -1
	}
	m, err := strconv.Atoi(get("ATTESTD_DB_MAX_CONNS", "16"))
	if err != nil || m < 1 || m > 1000 {
		return c, fmt.Errorf("ATTESTD_DB_MAX_CONNS: want 1..1000, got %q", getenv("ATTESTD_DB_MAX_CONNS"))
	}
	c.DBMaxConns = int32(m)
	if c.ShutdownTimeout, err = time.ParseDuration(get("ATTESTD_SHUTDOWN_TIMEOUT", "10s")); err != nil || c.ShutdownTimeout < 0 {
		return c, fmt.Errorf("ATTESTD_SHUTDOWN_TIMEOUT: want a duration like 10s, got %q", getenv("ATTESTD_SHUTDOWN_TIMEOUT"))
	}
	return c, nil
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
