package mcp_test

import (
	"context"
	"crypto/ed25519"
	"net"
	"path/filepath"
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

// Prices of the paying node's premium routes, in atomic units of USDC.
const (
	historyPrice = 10_000 // 0.01 USDC
	reportPrice  = 50_000
	bulkPrice    = 20_000
)

// wallets are the chain simulator and the accounts of a payment: the fee
// payer and payTo (the service's) and a funded payer (the agent's).
type wallets struct {
	chain *devnet.Chain
	devnet.Payment
}

func newWallets(t *testing.T) *wallets {
	t.Helper()
	chain, err := devnet.Start(context.Background(), devnet.Config{SlotInterval: -1, Logger: apptest.Logger()})
	testenv.Must(t, err, "chain simulator")
	t.Cleanup(chain.Close)
	w := &wallets{chain: chain}
	w.Payment, err = chain.NewPayment(solana.LAMPORTS_PER_SOL, 1_000_000)
	testenv.Must(t, err, "payment accounts")
	return w
}

// balance is payTo's USDC.
func (w *wallets) balance(t *testing.T) uint64 {
	t.Helper()
	b, err := w.chain.TokenBalance(w.PayToATA)
	testenv.Must(t, err, "payTo balance")
	return b
}

// keyFile writes the payer's keypair as the Solana CLI does.
func (w *wallets) keyFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "payer.json")
	testenv.Must(t, devnet.WriteKeypair(file, w.Payer), "keypair file")
	return file
}

// config settles on the simulator itself, within settle.
func (w *wallets) config(settle time.Duration) verifier.Config {
	return verifier.Config{PayTo: w.PayTo, Network: x402.Devnet, Asset: devnet.DevnetUSDCMint, Decimals: 6,
		Prices: map[string]uint64{"/premium/full-history/:agentId": historyPrice, "/premium/forensic-report/:agentId": reportPrice,
			"/premium/bulk-verify": bulkPrice},
		FeePayer: w.FeePayer, RPCURL: w.chain.RPCURL(), SettleTimeout: settle, FacilitatorTimeout: 5 * time.Second}
}

// payingNode starts a node over the fixture's data whose premium routes
// take x402 payments (cfg) without a key, with signed receipts, at its
// real address as public origin, wired as `attestd serve` wires them.
func (f *fixture) payingNode(t *testing.T, cfg verifier.Config) *apptest.Node {
	t.Helper()
	return f.payingNodeWith(t, cfg, nil)
}

// payingNodeWith is payingNode with more routes, added last (given the
// node's origin).
func (f *fixture) payingNodeWith(t *testing.T, cfg verifier.Config, routes func(*app.API, config.Origin)) *apptest.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	origin, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(t, err, "origin")
	var deps app.Deps
	return f.env.StartNode(t, apptest.NodeOptions{
		Listener: ln,
		Configure: func(d *app.Deps) {
			d.OpenAPIPatch = cfg.PatchOpenAPI
			deps = *d
		},
		Routes: func(api *app.API) {
			ctx := context.Background()
			svc, err := apikey.New(ctx, apikey.Deps{Store: deps.Store, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			t.Cleanup(svc.Close)
			signer, err := receipt.NewSigner(ed25519.NewKeyFromSeed([]byte("attestd mcp test receipt key 32b")), origin)
			testenv.Must(t, err, "receipt signer")
			v, err := verifier.New(ctx, verifier.Deps{Config: cfg, KeyPrefix: f.env.Prefix + "x402:", Ledger: deps.Store,
				Redis: apptest.NewRedis(t, f.env.RedisURL), Logger: apptest.Logger(), Registerer: prometheus.NewRegistry(), Receipts: signer})
			testenv.Must(t, err, "verifier")
			t.Cleanup(v.Close)
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{OnMissingKey: x402fiber.New(v, origin)}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium")
			h.Routes(api)
			if routes != nil {
				routes(api, origin)
			}
		},
	})
}

// settled lists the node's settled payments.
func settled(t *testing.T, st *store.Store) []store.Payment {
	t.Helper()
	ps, err := st.ListPayments(context.Background(), store.PaymentFilter{Status: store.PaymentSettled})
	testenv.Must(t, err, "list payments")
	return ps
}
