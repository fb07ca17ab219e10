package apikey

import (
	"time"

	"github.com/attestd/attestd/internal/config"
)

// ChannelSuffix follows ATTESTD_REDIS_PREFIX in the name of the pub/sub
// channel that carries revocations; give every node the same one.
const ChannelSuffix = "apikey:invalidate"

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_KEY_CACHE_TTL", Default: "4s", Help: "how long a node trusts a key lookup (bound on revocation reaching a node; at most 5 s)"},
	{Name: "ATTESTD_KEY_TOUCH_INTERVAL", Default: "5s", Help: "how often keys' last-used times are written (batched)"},
	{Name: "ATTESTD_KEY_MAX_ACTIVE", Default: "100", Help: "active keys per account"},
}

// ConfigFromEnv reads the tunables (Vars) with getenv. The caller sets
// Deps.Channel from the common configuration: <ATTESTD_REDIS_PREFIX> +
// ChannelSuffix.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	o := Config{
		CacheTTL:      e.Duration("ATTESTD_KEY_CACHE_TTL", 0, time.Millisecond, MaxCacheTTL),
		TouchInterval: e.Duration("ATTESTD_KEY_TOUCH_INTERVAL", 0, 100*time.Millisecond, time.Hour),
		MaxActiveKeys: e.Int("ATTESTD_KEY_MAX_ACTIVE", 0, 1, 100_000),
	}
	return o, e.Err()
}
