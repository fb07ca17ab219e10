package httpcache

import (
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/gofiber/fiber/v2"
)

// Cache-Control values that do not depend on configuration.
const (
	// NoStore: errors and /health. No cache may keep them (RFC 9111 would
	// let a cache reuse a 404, 405, 414 or 501 heuristically; this says no).
	NoStore = "no-store"
	// PrivateNoStore: answers that depend on who asks (premium, keys,
	// payments).
	PrivateNoStore = "private, no-store"
)

// Private marks the answer of a request as one no shared cache may keep
// and no cache may store: premium, key and payment answers. Every route
// behind an API key or a payment gets it from the key middleware; a
// handler that answers on its own behalf calls it too.
func Private(c *fiber.Ctx) { c.Set(fiber.HeaderCacheControl, PrivateNoStore) }

// Config is how long caches may reuse public answers.
type Config struct {
	// MaxAge is browsers' freshness (max-age) of answers that any new
	// attestation can change: lists, stats, agents, and confirmed
	// attestations. Browsers cannot be purged, so it is short.
	MaxAge time.Duration
	// SMaxAge is shared caches' (CDN, edge) freshness of the same.
	SMaxAge time.Duration
	// StaleWhileRevalidate is how long past its freshness a cache may
	// still answer with a list, stats or agent answer while it refetches
	// it (RFC 5861). Not given to confirmed attestations: a fork can drop
	// them.
	StaleWhileRevalidate time.Duration
	// FinalizedMaxAge is the freshness of a finalized attestation, which
	// never changes (immutable).
	FinalizedMaxAge time.Duration
}

// DefaultPolicy is the policy with every variable unset.
func DefaultPolicy() Config {
	return Config{MaxAge: 0, SMaxAge: 5 * time.Second, StaleWhileRevalidate: 5 * time.Second,
		FinalizedMaxAge: 365 * 24 * time.Hour}
}

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_HTTP_MAX_AGE", Default: "0s", Help: "browsers' max-age of lists, stats, agents and confirmed attestations"},
	{Name: "ATTESTD_HTTP_S_MAXAGE", Default: "5s", Help: "shared caches' (CDN, edge) s-maxage of the same"},
	{Name: "ATTESTD_HTTP_STALE_WHILE_REVALIDATE", Default: "5s", Help: "stale-while-revalidate of lists, stats and agents"},
	{Name: "ATTESTD_HTTP_FINALIZED_MAX_AGE", Default: "8760h", Help: "max-age of a finalized attestation (immutable)"},
}

// ConfigFromEnv reads the policy (Vars) with getenv (the process
// environment when nil). Durations are whole seconds.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	d := DefaultPolicy()
	p := Config{
		MaxAge:               seconds(e, "ATTESTD_HTTP_MAX_AGE", d.MaxAge, 0, time.Hour),
		SMaxAge:              seconds(e, "ATTESTD_HTTP_S_MAXAGE", d.SMaxAge, 0, 24*time.Hour),
		StaleWhileRevalidate: seconds(e, "ATTESTD_HTTP_STALE_WHILE_REVALIDATE", d.StaleWhileRevalidate, 0, 24*time.Hour),
		FinalizedMaxAge:      seconds(e, "ATTESTD_HTTP_FINALIZED_MAX_AGE", d.FinalizedMaxAge, time.Second, 365*24*time.Hour),
	}
	return p, e.Err()
}

func seconds(e *config.Env, name string, def, lo, hi time.Duration) time.Duration {
	d := e.Duration(name, def, lo, hi)
	if d%time.Second != 0 {
		e.Fail(name, "want whole seconds (Cache-Control counts in seconds), got %s", d)
		return def
	}
	return d
}

// Headers are the Cache-Control values of a policy, made once.
type Headers struct {
	Index     string // lists, stats, agents
	Confirmed string // a confirmed attestation
	Finalized string // a finalized attestation
}

// Headers renders the policy. A zero Policy renders DefaultPolicy.
func (p Config) Headers() Headers {
	if p == (Config{}) {
		p = DefaultPolicy()
	}
	fresh := "public, max-age=" + secs(p.MaxAge) + ", s-maxage=" + secs(p.SMaxAge)
	h := Headers{Index: fresh, Confirmed: fresh,
		Finalized: "public, max-age=" + secs(p.FinalizedMaxAge) + ", immutable"}
	if p.StaleWhileRevalidate > 0 {
		h.Index += ", stale-while-revalidate=" + secs(p.StaleWhileRevalidate)
	}
	return h
}

// StaleBound is the longest a shared cache that honours the policy may
// serve a list, stats or agent answer after the nodes moved to a new
// epoch: its freshness plus the stale-while-revalidate window.
func (p Config) StaleBound() time.Duration {
	if p == (Config{}) {
		p = DefaultPolicy()
	}
	return p.SMaxAge + p.StaleWhileRevalidate
}

func secs(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
