package verifier

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/keyfile"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
)

// Route is a payable route and the variable that prices it.
type Route struct {
	Method      string
	Path        string // below /api/v1, as registered (e.g. /premium/full-history/:agentId)
	Env         string
	Default     string // price in units of the asset, e.g. "0.01"
	Description string
	Input       Input // how it is called, for discovery (catalog.go)
}

// Routes are the premium routes, payable per request.
var Routes = []Route{
	{http.MethodGet, "/premium/full-history/:agentId", "ATTESTD_X402_PRICE_FULL_HISTORY", "0.01",
		"Full attestation history of one agent: up to 1000 receipts, newest first",
		Input{PathParam: "agentId", Output: "full-history.json", Query: []Param{
			{"limit", "100", `{"type":"string","pattern":"^[0-9]{1,4}$","description":"page size, 1..1000 (default 1000)"}`},
			{"offset", "", `{"type":"string","pattern":"^[0-9]{1,6}$","description":"records skipped, 0..100000"}`},
			{"cursor", "", `{"type":"string","description":"pagination.nextCursor of the previous page"}`},
			{"from", "", timeSchema}, {"to", "", timeSchema}}}},
	{http.MethodGet, "/premium/forensic-report/:agentId", "ATTESTD_X402_PRICE_FORENSIC_REPORT", "0.05",
		"Forensic audit report of one agent, sealed with a verifiable reportHash",
		Input{PathParam: "agentId", Output: "forensic-report.json", Query: []Param{{"from", "2026-11-01", timeSchema}, {"to", "", timeSchema}}}},
	{http.MethodPost, "/premium/bulk-verify", "ATTESTD_X402_PRICE_BULK_VERIFY", "0.02",
		"Verification of up to 1000 attestations in one call",
		Input{Output: "bulk-verify.json", Body: `{"ids":["` + ExampleAgent + `"]}`,
			BodySchema: `{"type":"object","properties":{"ids":{"type":"array","minItems":1,"maxItems":1000,"items":` + addressSchema + `}},"required":["ids"],"additionalProperties":false}`}},
}

// Vars lists the variables ConfigFromEnv reads.
var Vars = func() []config.Var {
	v := []config.Var{
		{Name: "ATTESTD_X402_PAY_TO", Default: "(none)", Help: "turns pay per request on: the Solana wallet that receives payments"},
		{Name: "ATTESTD_X402_NETWORK", Default: "solana", Help: "solana (mainnet) or solana-devnet"},
		{Name: "ATTESTD_X402_ASSET", Default: "(USDC of the network)", Help: "mint of the token prices are paid in"},
		{Name: "ATTESTD_X402_ASSET_DECIMALS", Default: "(6 for USDC)", Help: "decimals of ATTESTD_X402_ASSET; required for another mint"},
		{Name: "ATTESTD_X402_FACILITATOR_URL", Default: "(none)", Help: "settle through this facilitator (its /supported names the fee payer)"},
		{Name: "ATTESTD_X402_FACILITATOR_TIMEOUT", Default: "10s", Help: "deadline of a facilitator's /supported and /verify"},
		{Name: "ATTESTD_X402_FEE_PAYER_KEYPAIR", Default: "(none)", Help: "settle ourselves: Solana CLI keypair file of the fee payer"},
		{Name: "ATTESTD_X402_RPC_URL", Default: "(ATTESTD_SOLANA_RPC_URL)", Help: "Solana RPC used to simulate, send and confirm payments"},
		{Name: "ATTESTD_X402_SETTLE_TIMEOUT", Default: "20s", Help: "longest wait for a settlement to confirm"},
		{Name: "ATTESTD_X402_ANSWER_RETENTION", Default: "24h", Help: "how long the answer a payment bought is kept: the same payment presented again within it gets those bytes again (after it, 409); 1m to 720h"},
		{Name: "ATTESTD_X402_ANSWER_STORE_MB", Default: "1024", Help: "cap on the bytes (compressed, in MiB) all kept answers hold in PostgreSQL; when reached, new payments are refused (503, nothing charged) until older answers expire"},
		{Name: receipt.EnvKey, Default: "(none)", Help: "signs a receipt for every paid answer (offer-and-receipt, JWS EdDSA): base64 of a 32-byte Ed25519 seed (openssl rand -base64 32); published at /.well-known/jwks.json"},
		{Name: receipt.EnvKeyFile, Default: "(none)", Help: "the receipt key from a file instead: base64 seed or a Solana CLI keypair"},
	}
	for _, r := range Routes {
		v = append(v, config.Var{Name: r.Env, Default: r.Default, Help: "price of " + r.Method + " " + r.Path + " in units of the asset"})
	}
	return v
}()

// Config is the pay-per-request configuration. The zero value is off.
type Config struct {
	PayTo    solana.PublicKey
	Network  x402.Network
	Asset    solana.PublicKey
	Decimals int
	// Prices in atomic units, by route path.
	Prices map[string]uint64
	// FacilitatorURL settles through a facilitator; otherwise FeePayer
	// (with RPCURL) settles here.
	FacilitatorURL     string
	FacilitatorTimeout time.Duration
	FeePayer           solana.PrivateKey
	FeePayerFile       string
	RPCURL             string
	SettleTimeout      time.Duration
	// FeePayerIsPayTo: the fee payer also receives the payments.
	FeePayerIsPayTo bool
	// ReceiptKey signs a receipt for every paid answer (nil: no receipts).
	ReceiptKey ed25519.PrivateKey
	// AnswerRetention is how long a paid answer is kept for its payment
	// presented again (0: DefaultAnswerRetention).
	AnswerRetention time.Duration
	// AnswerStoreBytes caps the bytes all kept answers hold (0:
	// DefaultAnswerStoreBytes).
	AnswerStoreBytes int64
}

// Defaults of the kept answers.
const (
	DefaultAnswerRetention  = 24 * time.Hour
	DefaultAnswerStoreBytes = 1 << 30
)

// Enabled reports whether payments are on.
func (c Config) Enabled() bool { return !c.PayTo.IsZero() }

// SelfSettling reports whether this node settles with its own fee payer.
func (c Config) SelfSettling() bool { return c.FacilitatorURL == "" }

// ConfigFromEnv reads Vars with getenv (nil: the process environment). With
// ATTESTD_X402_PAY_TO unset, payments are off and every other x402
// variable must be unset too; otherwise exactly one of the facilitator and
// the fee payer keypair is required. Every problem is reported at once,
// naming the variable to set.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := config.NewEnv(getenv)
	var c Config
	payTo := e.String("ATTESTD_X402_PAY_TO", "")
	if payTo == "" {
		return c, offConfig(e)
	}
	pk, err := solana.PublicKeyFromBase58(payTo)
	if err != nil {
		e.Fail("ATTESTD_X402_PAY_TO", "want a base58 Solana address (32 bytes), got %q", payTo)
	}
	c.PayTo = pk
	c.readAsset(e)
	c.readPrices(e)
	if k, err := receipt.KeyFromEnv(getenv); err != nil {
		e.Fail(receipt.EnvKey, "%v", err)
	} else {
		c.ReceiptKey = k
	}
	c.AnswerRetention = e.Duration("ATTESTD_X402_ANSWER_RETENTION", DefaultAnswerRetention, time.Minute, 30*24*time.Hour)
	c.AnswerStoreBytes = int64(e.Int("ATTESTD_X402_ANSWER_STORE_MB", DefaultAnswerStoreBytes>>20, 16, 1<<20)) << 20
	c.readSettler(e)
	if err := e.Err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// offConfig checks a configuration with payments off: no other x402
// variable may be set.
func offConfig(e *config.Env) error {
	var set []string
	for _, v := range Vars {
		if e.String(v.Name, "") != "" {
			set = append(set, v.Name)
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("ATTESTD_X402_PAY_TO is not set, but %v are: set ATTESTD_X402_PAY_TO to the wallet that receives payments to turn pay per request on, or unset them", set)
	}
	return nil
}

// readAsset reads the network, and the asset prices are paid in with its
// decimals (USDC of the network unless set).
func (c *Config) readAsset(e *config.Env) {
	name := e.OneOf("ATTESTD_X402_NETWORK", x402.Mainnet.Name, x402.Mainnet.Name, x402.Devnet.Name)
	c.Network, _ = x402.NetworkByName(name)
	c.Asset, c.Decimals = c.Network.USDC, x402.USDCDecimals
	if a := e.String("ATTESTD_X402_ASSET", ""); a != "" {
		mint, err := solana.PublicKeyFromBase58(a)
		if err != nil {
			e.Fail("ATTESTD_X402_ASSET", "want a base58 mint address, got %q", a)
		} else {
			c.Asset = mint
		}
	}
	if e.String("ATTESTD_X402_ASSET_DECIMALS", "") != "" {
		c.Decimals = e.Int("ATTESTD_X402_ASSET_DECIMALS", x402.USDCDecimals, 0, 18)
	} else if c.Asset != x402.Mainnet.USDC && c.Asset != x402.Devnet.USDC {
		e.Fail("ATTESTD_X402_ASSET_DECIMALS", "is required when ATTESTD_X402_ASSET is not USDC (set the mint's decimals)")
	}
	if c.Asset == x402.Mainnet.USDC && c.Network.Name != x402.Mainnet.Name || c.Asset == x402.Devnet.USDC && c.Network.Name != x402.Devnet.Name {
		e.Fail("ATTESTD_X402_ASSET", "%s is USDC of another network than ATTESTD_X402_NETWORK=%s", c.Asset, c.Network.Name)
	}
}

// readPrices reads the routes' prices, in units of the asset (at most
// 1000 units: more is likely a price written in atomic units).
func (c *Config) readPrices(e *config.Env) {
	c.Prices = map[string]uint64{}
	for _, r := range Routes {
		v := e.String(r.Env, r.Default)
		n, err := x402.ParseAmount(v, c.Decimals)
		if err != nil {
			e.Fail(r.Env, "%v", err)
			continue
		}
		if n > 1_000*pow10(c.Decimals) {
			e.Fail(r.Env, "%s is more than 1000 units of the asset; is it a price in atomic units? write it in units (0.01)", v)
		}
		c.Prices[r.Path] = n
	}
}

// readSettler reads who settles: a facilitator, or this node with its own
// fee payer keypair (and an RPC), exactly one of them.
func (c *Config) readSettler(e *config.Env) {
	c.FacilitatorURL = e.String("ATTESTD_X402_FACILITATOR_URL", "")
	c.FacilitatorTimeout = e.Duration("ATTESTD_X402_FACILITATOR_TIMEOUT", 10*time.Second, 100*time.Millisecond, 2*time.Minute)
	c.SettleTimeout = e.Duration("ATTESTD_X402_SETTLE_TIMEOUT", x402.DefaultSettleTimeout, time.Second, 5*time.Minute)
	c.FeePayerFile = e.String("ATTESTD_X402_FEE_PAYER_KEYPAIR", "")
	c.RPCURL = e.String("ATTESTD_X402_RPC_URL", e.String("ATTESTD_SOLANA_RPC_URL", "http://127.0.0.1:8899"))
	switch {
	case c.FacilitatorURL != "" && c.FeePayerFile != "":
		e.Fail("ATTESTD_X402_FACILITATOR_URL", "and ATTESTD_X402_FEE_PAYER_KEYPAIR are both set: settle through the facilitator or with your own fee payer, not both")
	case c.FacilitatorURL == "" && c.FeePayerFile == "":
		e.Fail("ATTESTD_X402_PAY_TO", "is set, so payments need a settler: set ATTESTD_X402_FACILITATOR_URL (a facilitator pays the fees) or ATTESTD_X402_FEE_PAYER_KEYPAIR (a Solana CLI keypair file with SOL for fees, used with ATTESTD_X402_RPC_URL)")
	case c.FacilitatorURL != "":
		u, err := url.Parse(c.FacilitatorURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			e.Fail("ATTESTD_X402_FACILITATOR_URL", "want an absolute http(s) URL, got %q", c.FacilitatorURL)
		}
	default:
		c.readFeePayer(e)
	}
}

// readFeePayer reads the fee payer keypair of a node that settles itself,
// and checks its RPC URL.
func (c *Config) readFeePayer(e *config.Env) {
	k, err := keyfile.Keypair(c.FeePayerFile)
	if err != nil {
		e.Fail("ATTESTD_X402_FEE_PAYER_KEYPAIR", "%v", err)
	} else {
		c.FeePayer = solana.PrivateKey(k)
		if c.FeePayer.PublicKey() == c.PayTo {
			// Allowed by the scheme, but then the fee payer's own
			// token account receives: say so, it is rarely meant.
			c.FeePayerIsPayTo = true
		}
	}
	u, err := url.Parse(c.RPCURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		e.Fail("ATTESTD_X402_RPC_URL", "want an absolute http(s) URL, got %q", c.RPCURL)
	}
}

func pow10(n int) uint64 {
	p := uint64(1)
	for i := 0; i < n; i++ {
		p *= 10
	}
	return p
}

// errOff is returned by New for a configuration that is off.
var errOff = errors.New("x402: payments are not configured (ATTESTD_X402_PAY_TO is unset)")

// RecoverTermsFromEnv reads what the reconciler's settlement recovery
// needs (attestd index): ATTESTD_X402_PAY_TO and the network and asset
// variables. Zero terms (no recovery) when ATTESTD_X402_PAY_TO is unset.
func RecoverTermsFromEnv(getenv func(string) string) (RecoverTerms, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := config.NewEnv(getenv)
	payTo := e.String("ATTESTD_X402_PAY_TO", "")
	if payTo == "" {
		return RecoverTerms{}, nil
	}
	var c Config
	pk, err := solana.PublicKeyFromBase58(payTo)
	if err != nil {
		e.Fail("ATTESTD_X402_PAY_TO", "want a base58 Solana address (32 bytes), got %q", payTo)
	}
	c.readAsset(e)
	if err := e.Err(); err != nil {
		return RecoverTerms{}, err
	}
	return RecoverTerms{PayTo: pk, Asset: c.Asset, Network: c.Network.CAIP2}, nil
}
