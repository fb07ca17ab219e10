package stream

import (
	"time"

	"github.com/attestd/attestd/internal/config"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_STREAM_MAX_PER_IP", Default: "32", Help: "open live streams one client IP (IPv6: /64, as the rate limiter resolves it) may hold on one node; beyond it 429"},
	{Name: "ATTESTD_STREAM_MAX", Default: "20000", Help: "open live streams per node; beyond it 503"},
	{Name: "ATTESTD_STREAM_HEARTBEAT", Default: "15s", Help: "a comment line is sent on a stream quiet for this long"},
	{Name: "ATTESTD_STREAM_LIFETIME", Default: "10m", Help: "a stream ends after this long; the client reconnects with its last id"},
	{Name: "ATTESTD_STREAM_WRITE_TIMEOUT", Default: "10s", Help: "a client that does not take a write within this long is dropped (slow)"},
	{Name: "ATTESTD_STREAM_RETENTION", Default: "24h", Help: "how long the stream log keeps changes: a stream resumes from a cursor this recent"},
	{Name: "ATTESTD_STREAM_POLL", Default: "2s", Help: "how often a node reads the stream log without an announcement (the safety net under Redis pub/sub)"},
}

// Config tunes the live stream.
type Config struct {
	MaxPerIP     int
	MaxStreams   int
	Heartbeat    time.Duration
	Lifetime     time.Duration
	WriteTimeout time.Duration
	Retention    time.Duration
	Poll         time.Duration
}

// DefaultConfig is the configuration with every default.
func DefaultConfig() Config {
	return Config{MaxPerIP: 32, MaxStreams: 20000, Heartbeat: 15 * time.Second, Lifetime: 10 * time.Minute,
		WriteTimeout: 10 * time.Second, Retention: 24 * time.Hour, Poll: 2 * time.Second}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxPerIP <= 0 {
		c.MaxPerIP = d.MaxPerIP
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = d.MaxStreams
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = d.Heartbeat
	}
	if c.Lifetime <= 0 {
		c.Lifetime = d.Lifetime
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.Retention <= 0 {
		c.Retention = d.Retention
	}
	if c.Poll <= 0 {
		c.Poll = d.Poll
	}
	return c
}

// ConfigFromEnv reads Vars with getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		MaxPerIP:     e.Int("ATTESTD_STREAM_MAX_PER_IP", 32, 1, 1_000_000),
		MaxStreams:   e.Int("ATTESTD_STREAM_MAX", 20000, 1, 10_000_000),
		Heartbeat:    e.Duration("ATTESTD_STREAM_HEARTBEAT", 15*time.Second, 100*time.Millisecond, time.Hour),
		Lifetime:     e.Duration("ATTESTD_STREAM_LIFETIME", 10*time.Minute, time.Second, 24*time.Hour),
		WriteTimeout: e.Duration("ATTESTD_STREAM_WRITE_TIMEOUT", 10*time.Second, 100*time.Millisecond, 10*time.Minute),
		Retention:    e.Duration("ATTESTD_STREAM_RETENTION", 24*time.Hour, time.Minute, 90*24*time.Hour),
		Poll:         e.Duration("ATTESTD_STREAM_POLL", 2*time.Second, 10*time.Millisecond, time.Minute),
	}
	return c, e.Err()
}
