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
	{Name: "ATTESTD_STREAM_BUFFER_KB", Default: "256", Help: "KiB one stream may hold in memory for its client (events read but not yet taken, catching up included): a catch-up reads at most this much at a time"},
	{Name: "ATTESTD_STREAM_BUFFER_TOTAL_MB", Default: "64", Help: "MiB of memory all streams of a node may cost together (they hold at most half of it: the collector lets the heap reach twice what is held); when it is full, streams blocked on clients that take nothing are ended first, then the stream asking ends with an error event STREAM_BUFFER_FULL and its client resumes from its last id"},
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
	// BufferPerStream bounds the bytes one stream holds for its client
	// (catch-up rows and events not yet written). BufferTotal bounds what
	// every stream of the node together may cost its memory: they hold
	// at most half of it (heldLimit).
	BufferPerStream int64
	BufferTotal     int64
}

// heldLimit is the most the node's streams hold together: half of
// BufferTotal, because Go's collector (at its default GOGC=100) lets the
// heap grow to twice its live bytes before it collects, so bytes held
// cost the process's memory up to twice their size.
func heldLimit(c Config) int64 { return c.BufferTotal / 2 }

// Bounds of the byte budgets. A stream needs room for its write buffer
// and a catch-up read of a few rows.
const (
	minBufferPerStream = 64 << 10
	maxBufferPerStream = 64 << 20
	minBufferTotal     = 1 << 20
)

// DefaultConfig is the configuration with every default.
func DefaultConfig() Config {
	return Config{MaxPerIP: 32, MaxStreams: 20000, Heartbeat: 15 * time.Second, Lifetime: 10 * time.Minute,
		WriteTimeout: 10 * time.Second, Retention: 24 * time.Hour, Poll: 2 * time.Second,
		BufferPerStream: 256 << 10, BufferTotal: 64 << 20}
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
	if c.BufferPerStream <= 0 {
		c.BufferPerStream = d.BufferPerStream
	}
	c.BufferPerStream = min(max(c.BufferPerStream, minBufferPerStream), maxBufferPerStream)
	if c.BufferTotal <= 0 {
		c.BufferTotal = d.BufferTotal
	}
	c.BufferTotal = max(c.BufferTotal, minBufferTotal)
	return c
}

// ConfigFromEnv reads Vars with getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		MaxPerIP:        e.Int("ATTESTD_STREAM_MAX_PER_IP", 32, 1, 1_000_000),
		MaxStreams:      e.Int("ATTESTD_STREAM_MAX", 20000, 1, 10_000_000),
		Heartbeat:       e.Duration("ATTESTD_STREAM_HEARTBEAT", 15*time.Second, 100*time.Millisecond, time.Hour),
		Lifetime:        e.Duration("ATTESTD_STREAM_LIFETIME", 10*time.Minute, time.Second, 24*time.Hour),
		WriteTimeout:    e.Duration("ATTESTD_STREAM_WRITE_TIMEOUT", 10*time.Second, 100*time.Millisecond, 10*time.Minute),
		Retention:       e.Duration("ATTESTD_STREAM_RETENTION", 24*time.Hour, time.Minute, 90*24*time.Hour),
		Poll:            e.Duration("ATTESTD_STREAM_POLL", 2*time.Second, 10*time.Millisecond, time.Minute),
		BufferPerStream: int64(e.Int("ATTESTD_STREAM_BUFFER_KB", 256, minBufferPerStream>>10, maxBufferPerStream>>10)) << 10,
		BufferTotal:     int64(e.Int("ATTESTD_STREAM_BUFFER_TOTAL_MB", 64, minBufferTotal>>20, 1<<20)) << 20,
	}
	return c, e.Err()
}
