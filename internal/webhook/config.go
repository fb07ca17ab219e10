package webhook

import (
	"fmt"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/webhook/keyring"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_WEBHOOK_SECRET_KEYS", Default: "(none: webhooks off)", Help: "comma-separated id:base64 AES-256 keys that seal webhook secrets, newest first (it seals; all open)"},
	{Name: "ATTESTD_WEBHOOK_ALLOW_LOOPBACK", Default: "0", Help: "1 allows http:// and loopback receivers (local development only)"},
	{Name: "ATTESTD_WEBHOOK_MAX_PER_ACCOUNT", Default: "25", Help: "webhooks per account"},
	{Name: "ATTESTD_WEBHOOK_TIMEOUT", Default: "10s", Help: "one delivery attempt, connect to last byte"},
	{Name: "ATTESTD_WEBHOOK_RETRY_SCHEDULE", Default: "30s,2m,10m,1h,6h,24h", Help: "waits before each retry; a delivery failing them all is failed"},
	{Name: "ATTESTD_WEBHOOK_DISABLE_AFTER", Default: "72h", Help: "a webhook whose deliveries all fail this long is deactivated"},
	{Name: "ATTESTD_WEBHOOK_CONCURRENCY", Default: "64", Help: "deliveries in flight per worker"},
	{Name: "ATTESTD_WEBHOOK_ENDPOINT_CONCURRENCY", Default: "8", Help: "deliveries in flight per worker to one webhook"},
	{Name: "ATTESTD_WEBHOOK_ENDPOINT_RATE", Default: "500", Help: "deliveries per second to one webhook, all workers together; 0: no limit"},
	{Name: "ATTESTD_WEBHOOK_RECOVERY_RATE", Default: "5000", Help: "deliveries per second a worker's recoveries (POST /webhooks/:id/recover) together queue again at most; the live deliveries' latency sets the rate below it (never below a tenth), and each recovery stays within its webhook's own limits; a worker runs up to 4 recoveries at once"},
	{Name: "ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY", Default: "2", Help: "recovered deliveries in flight per worker, all its recoveries together (live deliveries are not counted; over it recovered ones wait)"},
	{Name: "ATTESTD_WEBHOOK_HOST_RATE", Default: "50", Help: "deliveries per second to one destination host from verified webhooks (their receiver answered the webhook.verify challenge), all accounts and workers together; over it they wait their turn; 0: no limit"},
	{Name: "ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE", Default: "5", Help: "deliveries and verification requests per second to one destination host from webhooks not verified (yet), all accounts and workers together; over it they wait their turn, in order; answering the challenge moves a webhook to ATTESTD_WEBHOOK_HOST_RATE; 0: no limit"},
	{Name: "ATTESTD_WEBHOOK_VERIFY_SCHEDULE", Default: "10s,1m,5m,30m", Help: "waits before each further endpoint verification request while the receiver does not answer (no answer, 408, 429, 5xx); any other answer without the challenge ends the round unverified, as do all these failing"},
	{Name: "ATTESTD_WEBHOOK_PARTITIONS", Default: "4", Help: "job streams; the same on every process of a deployment"},
	{Name: "ATTESTD_WEBHOOK_CLAIM_IDLE", Default: "30s", Help: "a job held this long by a worker that stopped is taken over"},
	{Name: "ATTESTD_WEBHOOK_LOG_RETENTION", Default: "720h", Help: "events, deliveries and attempts older than this are pruned"},
	{Name: "ATTESTD_WEBHOOK_POLL_INTERVAL", Default: "200ms", Help: "how often an idle relay looks for new outbox rows"},
	{Name: "ATTESTD_WORKER_METRICS_ADDR", Default: "127.0.0.1:9092", Help: "the worker's /metrics and /health; empty disables it"},
}

// Config is the webhook configuration shared by API nodes and workers.
type Config struct {
	// Keys seal and open secrets; nil means webhooks are off (the routes
	// answer 503 and a worker refuses to start).
	Keys                *keyring.Keyring
	AllowLoopback       bool
	MaxPerAccount       int
	Timeout             time.Duration
	Schedule            []time.Duration
	DisableAfter        time.Duration
	Concurrency         int
	EndpointConcurrency int
	EndpointRate        int
	// RecoveryRate is how many deliveries per second a worker's
	// recoveries together queue at most (the live latency sets the pace
	// below it).
	RecoveryRate int
	// RecoveryConcurrency bounds the recovered deliveries a worker sends
	// at once (within Concurrency).
	RecoveryConcurrency int
	// HostRate caps the requests per second to one destination host of
	// verified webhooks, across accounts and workers (0: no cap).
	HostRate int
	// UnverifiedHostRate caps the requests per second (deliveries and
	// verification requests) to one destination host of webhooks that are
	// not verified, across accounts and workers (0: no cap).
	UnverifiedHostRate int
	// VerifySchedule is the waits between endpoint verification attempts.
	VerifySchedule []time.Duration
	Partitions     int
	ClaimIdle      time.Duration
	Retention      time.Duration
	PollInterval   time.Duration
	MetricsAddr    string
}

// DefaultVerifySchedule is the waits between verification attempts: five
// attempts in about 36 minutes.
var DefaultVerifySchedule = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute}

// DefaultSchedule is CONTRACT.md's retry schedule.
var DefaultSchedule = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}

// DefaultConfig is the configuration with every default (and no keys).
func DefaultConfig() Config {
	return Config{
		MaxPerAccount: 25, Timeout: 10 * time.Second, Schedule: DefaultSchedule, DisableAfter: 72 * time.Hour,
		Concurrency: 64, EndpointConcurrency: 8, EndpointRate: 500, RecoveryRate: 5000, RecoveryConcurrency: 2, HostRate: 50, UnverifiedHostRate: 5, VerifySchedule: DefaultVerifySchedule, Partitions: 4, ClaimIdle: 30 * time.Second,
		Retention: 720 * time.Hour, PollInterval: 200 * time.Millisecond, MetricsAddr: "127.0.0.1:9092",
	}
}

// ConfigFromEnv reads Vars with getenv (nil: the process environment).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	d := DefaultConfig()
	c := Config{
		AllowLoopback:       e.Switch("ATTESTD_WEBHOOK_ALLOW_LOOPBACK", "0", "1"),
		MaxPerAccount:       e.Int("ATTESTD_WEBHOOK_MAX_PER_ACCOUNT", d.MaxPerAccount, 1, 10_000),
		Timeout:             e.Duration("ATTESTD_WEBHOOK_TIMEOUT", d.Timeout, 100*time.Millisecond, time.Minute),
		DisableAfter:        e.Duration("ATTESTD_WEBHOOK_DISABLE_AFTER", d.DisableAfter, time.Second, 90*24*time.Hour),
		Concurrency:         e.Int("ATTESTD_WEBHOOK_CONCURRENCY", d.Concurrency, 1, 10_000),
		EndpointConcurrency: e.Int("ATTESTD_WEBHOOK_ENDPOINT_CONCURRENCY", d.EndpointConcurrency, 1, 1000),
		EndpointRate:        e.Int("ATTESTD_WEBHOOK_ENDPOINT_RATE", d.EndpointRate, 0, 1_000_000),
		HostRate:            e.Int("ATTESTD_WEBHOOK_HOST_RATE", d.HostRate, 0, 1_000_000),
		UnverifiedHostRate:  e.Int("ATTESTD_WEBHOOK_UNVERIFIED_HOST_RATE", d.UnverifiedHostRate, 0, 1_000_000),
		RecoveryRate:        e.Int("ATTESTD_WEBHOOK_RECOVERY_RATE", d.RecoveryRate, 1, 1_000_000),
		RecoveryConcurrency: e.Int("ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY", d.RecoveryConcurrency, 1, 10_000),
		Partitions:          e.Int("ATTESTD_WEBHOOK_PARTITIONS", d.Partitions, 1, 1024),
		ClaimIdle:           e.Duration("ATTESTD_WEBHOOK_CLAIM_IDLE", d.ClaimIdle, 500*time.Millisecond, time.Hour),
		Retention:           e.Duration("ATTESTD_WEBHOOK_LOG_RETENTION", d.Retention, time.Hour, 10*365*24*time.Hour),
		PollInterval:        e.Duration("ATTESTD_WEBHOOK_POLL_INTERVAL", d.PollInterval, 10*time.Millisecond, time.Minute),
		MetricsAddr:         d.MetricsAddr,
	}
	if v, set := e.Lookup("ATTESTD_WORKER_METRICS_ADDR"); set {
		c.MetricsAddr = v
	}
	if c.EndpointConcurrency > c.Concurrency {
		c.EndpointConcurrency = c.Concurrency
	}
	sched, err := ParseSchedule(e.String("ATTESTD_WEBHOOK_RETRY_SCHEDULE", ""))
	if err != nil {
		e.Fail("ATTESTD_WEBHOOK_RETRY_SCHEDULE", "%v", err)
	}
	c.Schedule = sched
	c.VerifySchedule = DefaultVerifySchedule
	if v := e.String("ATTESTD_WEBHOOK_VERIFY_SCHEDULE", ""); v != "" {
		vs, err := ParseSchedule(v)
		if err != nil {
			e.Fail("ATTESTD_WEBHOOK_VERIFY_SCHEDULE", "%v", err)
		}
		c.VerifySchedule = vs
	}
	if spec := e.String("ATTESTD_WEBHOOK_SECRET_KEYS", ""); spec != "" {
		k, err := keyring.Parse(spec)
		if err != nil {
			e.Fail("ATTESTD_WEBHOOK_SECRET_KEYS", "%v", err)
		}
		c.Keys = k
	}
	return c, e.Err()
}

// ParseSchedule reads a retry schedule: comma-separated Go durations from
// 10ms to 7 days, at most 20 ("": the default schedule).
func ParseSchedule(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultSchedule, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 20 {
		return DefaultSchedule, fmt.Errorf("at most 20 retries, got %d", len(parts))
	}
	out := make([]time.Duration, 0, len(parts))
	for _, p := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 10*time.Millisecond || d > 7*24*time.Hour {
			return DefaultSchedule, fmt.Errorf("want comma-separated Go durations from 10ms to 168h (such as 30s,2m,10m), got %q", p)
		}
		out = append(out, d)
	}
	return out, nil
}

// Enabled reports whether webhooks can run (a secret key is configured).
func (c Config) Enabled() bool { return c.Keys != nil }
