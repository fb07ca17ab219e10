package web

import (
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/x402"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_WEB_DOMAIN", Default: "(removed)", Help: "removed: set ATTESTD_PUBLIC_URL; a node with it set refuses to start"},
	{Name: "ATTESTD_WEB_SESSION_TTL", Default: "12h", Help: "lifetime of a web console session (5m to 7 days)"},
	{Name: "ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR", Default: "5", Help: "accounts sign-in may create per client IP (IPv6: /64) per hour, fleet-wide; 0: no limit"},
}

// Config is the web application's configuration.
type Config struct {
	// Origin is the public origin of the node (ATTESTD_PUBLIC_URL): the
	// domain and URI every sign-in message must name, and whether the
	// session cookie is Secure. Zero: the console is off (its pages and
	// sign-in routes answer 503 naming the variable).
	Origin config.Origin
	// ChainID is the Chain ID sign-in messages must name (ChainFor);
	// empty means mainnet.
	ChainID string
	// NewAccountsPerHour bounds the accounts sign-in creates per client
	// IP (IPv6: /64) in an hour, across the fleet; 0: no bound.
	NewAccountsPerHour int
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
	// NewAccountWindow is the window of NewAccountsPerHour.
	NewAccountWindow = time.Hour
	// DefaultNewAccountsPerHour is ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR's default.
	DefaultNewAccountsPerHour = 5
)

// ConfigFromEnv reads Vars with getenv. The origin and the chain are the
// node's (ATTESTD_PUBLIC_URL, the x402 network): the caller sets them.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	if e.String("ATTESTD_WEB_DOMAIN", "") != "" {
		e.Fail("ATTESTD_WEB_DOMAIN", "was removed: unset it and set ATTESTD_PUBLIC_URL to the origin browsers use (such as https://attestd.example.com)")
	}
	c := Config{
		SessionTTL:         e.Duration("ATTESTD_WEB_SESSION_TTL", 12*time.Hour, 5*time.Minute, 7*24*time.Hour),
		NewAccountsPerHour: e.Int("ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR", DefaultNewAccountsPerHour, 0, 1_000_000),
	}
	return c, e.Err()
}

// ChainFor is the SIWS Chain ID of an x402 network: devnet for Solana
// devnet, mainnet otherwise.
func ChainFor(n x402.Network) string {
	if n.Name == x402.Devnet.Name {
		return "devnet"
	}
	return "mainnet"
}

func (c Config) chainID() string {
	if c.ChainID == "" {
		return "mainnet"
	}
	return c.ChainID
}

// ChainID is the Chain ID sign-in messages must name.
func (w *Web) ChainID() string { return w.opt.Config.chainID() }
