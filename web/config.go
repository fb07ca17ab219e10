package web

import (
	"time"

	"github.com/attestd/attestd/internal/config"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_WEB_DOMAIN", Default: "(none: the request's Host)", Help: "the domain sign-in messages must name (empty: the request's Host)"},
	{Name: "ATTESTD_WEB_SESSION_TTL", Default: "12h", Help: "lifetime of a web console session (5m to 7 days)"},
}

// Config is the web application's configuration.
type Config struct {
	// Domain, when set, is the only domain a sign-in message may name
	// (host[:port], as browsers send Host). Empty: the Host of the request
	// that signs in, so the domain the wallet showed is the one the
	// browser talked to.
	Domain string
	// SessionTTL is how long a session lasts after sign-in.
	SessionTTL time.Duration
}

// Bounds of the sign-in.
const (
	// NonceTTL is how long an issued nonce can be used.
	NonceTTL = 5 * time.Minute
	// MaxMessageLifetime bounds Expiration Time - Issued At.
	MaxMessageLifetime = 10 * time.Minute
	// ClockSkew is how far in the future Issued At may be.
	ClockSkew = time.Minute
)

// ConfigFromEnv reads Vars with getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		Domain:     e.String("ATTESTD_WEB_DOMAIN", ""),
		SessionTTL: e.Duration("ATTESTD_WEB_SESSION_TTL", 12*time.Hour, 5*time.Minute, 7*24*time.Hour),
	}
	return c, e.Err()
}
