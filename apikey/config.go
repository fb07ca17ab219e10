package apikey

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConfigFromEnv reads the tunables of Options with getenv:
//
//	ATTESTD_KEY_CACHE_TTL       how long a node trusts a key lookup, and so the
//	                            bound on revocation reaching a node that missed
//	                            the announcement (default 4s, at most 5s)
//	ATTESTD_KEY_TOUCH_INTERVAL  how often last-used times are written (default 5s)
//	ATTESTD_KEY_MAX_ACTIVE      active keys per account (default 100)
//
// The invalidation channel is <ATTESTD_REDIS_PREFIX>apikey:invalidate; the
// caller sets Options.Channel from the common configuration.
func ConfigFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	if v := get("ATTESTD_KEY_CACHE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxCacheTTL {
			errs = append(errs, fmt.Errorf("ATTESTD_KEY_CACHE_TTL: want a duration in (0, %s], got %q", MaxCacheTTL, v))
		}
		o.CacheTTL = d
	}
	if v := get("ATTESTD_KEY_TOUCH_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > time.Hour {
			errs = append(errs, fmt.Errorf("ATTESTD_KEY_TOUCH_INTERVAL: want a duration from 100ms to 1h, got %q", v))
		}
		o.TouchInterval = d
	}
	if v := get("ATTESTD_KEY_MAX_ACTIVE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100_000 {
			errs = append(errs, fmt.Errorf("ATTESTD_KEY_MAX_ACTIVE: want 1..100000, got %q", v))
		}
		o.MaxActiveKeys = n
	}
	return o, errors.Join(errs...)
}
