package x402fiber_test

import (
	"github.com/attestd/attestd/internal/tracing"

	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	historyPath = "/premium/full-history/:agentId"
	reportPath  = "/premium/forensic-report/:agentId"
	bulkPath    = "/premium/bulk-verify"
	price       = 10_000 // 0.01 USDC
)

// fixture is a seeded database, a chain simulator and the wallets of a
// payment: the fee payer (ours), payTo (ours) and a funded payer.
type fixture struct {
	env   *apptest.Env
	chain *devnet.Chain
	devnet.Payment
	agent string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 60})
	chain, err := devnet.Start(context.Background(), devnet.Config{SlotInterval: -1, Logger: apptest.Logger()})
	testenv.Must(t, err, "devnet")
	t.Cleanup(chain.Close)
	f := &fixture{env: env, chain: chain}
	// The agent with the most attestations.
	testenv.Must(t, env.Store.Pool().QueryRow(context.Background(),
		"SELECT agent_pda FROM attestations GROUP BY agent_pda ORDER BY count(*) DESC LIMIT 1").Scan(&f.agent), "busiest agent")
	f.Payment, err = chain.NewPayment(solana.LAMPORTS_PER_SOL, 1_000_000)
	testenv.Must(t, err, "payment accounts")
	return f
}

// config is a self-settling configuration on the simulator.
func (f *fixture) config() verifier.Config {
	return verifier.Config{PayTo: f.PayTo, Network: x402.Devnet, Asset: devnet.DevnetUSDCMint, Decimals: 6,
		Prices:   map[string]uint64{historyPath: price, reportPath: 5 * price, bulkPath: 2 * price},
		FeePayer: f.FeePayer, RPCURL: f.chain.RPCURL(), SettleTimeout: 10 * time.Second, FacilitatorTimeout: 5 * time.Second}
}

func (f *fixture) balance(t *testing.T) uint64 {
	t.Helper()
	b, err := f.chain.TokenBalance(f.PayToATA)
	testenv.Must(t, err, "payTo balance")
	return b
}

// paidNode is an API node with keys, premium routes and pay per request.
type paidNode struct {
	*apptest.Node
	v      *verifier.Verifier
	reg    *prometheus.Registry
	signer *receipt.Signer
}

func (f *fixture) node(t *testing.T, cfg verifier.Config, hc *http.Client) *paidNode {
	t.Helper()
	return f.nodeWith(t, cfg, hc, true)
}

// nodeWith may leave the replay guard out of Redis (the ledger alone guards).
func (f *fixture) nodeWith(t *testing.T, cfg verifier.Config, hc *http.Client, redisGuard bool) *paidNode {
	t.Helper()
	return f.nodeAt(t, cfg, hc, redisGuard, nil, testOrigin)
}

// receiptKey signs the test nodes' receipts.
var receiptKey = ed25519.NewKeyFromSeed([]byte("attestd x402 test receipt key 32"))

// nodeAt serves on ln (nil: any port) at public origin, with receipts and
// the discovery documents, as serve builds them.
func (f *fixture) nodeAt(t *testing.T, cfg verifier.Config, hc *http.Client, redisGuard bool, ln net.Listener, origin config.Origin) *paidNode {
	t.Helper()
	pn := &paidNode{}
	var deps app.Deps
	pn.Node = f.env.StartNode(t, apptest.NodeOptions{
		Listener: ln,
		Configure: func(d *app.Deps) {
			d.OpenAPIPatch = cfg.PatchOpenAPI
			d.Trace = tracing.Middleware() // as serve: nil unless a test turned tracing on
			deps = *d
		},
		Routes: func(api *app.API) {
			svc, err := apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Redis: apptest.NewRedis(t, f.env.RedisURL),
				Channel: f.env.Prefix + apikey.ChannelSuffix, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			t.Cleanup(svc.Close)
			pn.reg = prometheus.NewRegistry()
			signer, err := receipt.NewSigner(receiptKey, origin)
			testenv.Must(t, err, "receipt signer")
			pn.signer = signer
			vopt := verifier.Deps{Config: cfg, KeyPrefix: f.env.Prefix + "x402:", Ledger: deps.Store, Logger: apptest.Logger(),
				Registerer: pn.reg, HTTPClient: hc, Receipts: signer}
			if redisGuard {
				vopt.Redis = apptest.NewRedis(t, f.env.RedisURL)
			}
			v, err := verifier.New(context.Background(), vopt)
			testenv.Must(t, err, "verifier")
			t.Cleanup(v.Close)
			pn.v = v
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{OnMissingKey: x402fiber.New(v, origin)}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium")
			h.Routes(api)
			disc, err := x402fiber.NewDiscovery(v, origin)
			testenv.Must(t, err, "discovery")
			disc.Routes(api)
		},
	})
	return pn
}

// challenge asks for a route unpaid and decodes the 402's header.
func (pn *paidNode) challenge(t *testing.T, method, path string, body []byte) *x402.PaymentRequired {
	t.Helper()
	r := pn.Do(t, method, path, body, nil)
	if r.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid %s %s: %d %s", method, path, r.Status, r.Body)
	}
	pr, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
	testenv.Must(t, err, "decode PAYMENT-REQUIRED")
	return pr
}

// wallet builds the payment a wallet would for pr.
func (f *fixture) wallet(t *testing.T, pr *x402.PaymentRequired) string {
	t.Helper()
	q := pr.Accepts[0]
	wire, err := x402.BuildExact(q, x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
	testenv.Must(t, err, "build payment")
	return header(t, x402.NewPaymentPayload(pr.Resource, q, wire))
}

func header(t *testing.T, v any) string {
	t.Helper()
	h, err := x402.EncodeHeader(v)
	testenv.Must(t, err, "encode header")
	return h
}

func (pn *paidNode) pay(t *testing.T, method, path string, body []byte, payment string) *apptest.Response {
	t.Helper()
	return pn.Do(t, method, path, body, map[string]string{x402.HeaderPaymentSignature: payment})
}

// reason is the refusal's error.reason.
func reason(t *testing.T, r *apptest.Response) string {
	t.Helper()
	var b struct {
		Error struct{ Reason string } `json:"error"`
		Data  json.RawMessage         `json:"data"`
	}
	r.JSON(t, &b)
	if b.Data != nil {
		t.Errorf("a refused payment got content: %s", r.Body)
	}
	return b.Error.Reason
}

// counter sums the samples of a counter or gauge whose labels include the
// given ones.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return testenv.MetricSum(t, reg, name, labels...)
}

func ledger(t *testing.T, st *store.Store, status store.PaymentStatus) []store.Payment {
	t.Helper()
	ps, err := st.ListPayments(context.Background(), store.PaymentFilter{Status: status})
	testenv.Must(t, err, "list payments")
	return ps
}

func encode(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
