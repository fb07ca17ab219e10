package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/keyfile"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
)

func runDevnet(ctx context.Context, args []string) error {
	fs := newFlags("devnet")
	addr := fs.String("addr", "127.0.0.1:8899", "JSON-RPC listen address; the websocket listens on the next port")
	agents := fs.Int("agents", 10, "agents to register at start")
	atts := fs.Int("attestations", 1000, "attestations to record at start")
	batch := fs.Int("batch", 100, "attestations per record_attestations transaction (1..100)")
	rate := fs.Float64("rate", 0, "attestations per second to keep producing after start (0: none)")
	seedN := fs.Int64("seed", 1, "seed of keys and payloads (same seed, same chain content)")
	slot := fs.Duration("slot", 400*time.Millisecond, "slot duration")
	depth := fs.Uint64("finality", 32, "slots from inclusion to finality")
	program := fs.String("program", "", "Prova program id (default: ATTESTD_PROGRAM_ID or the mainnet id)")
	logLimit := fs.Int("log-limit", 10_000, "truncate a transaction's logs past this many bytes, as the runtime does (0: never)")
	fund := fs.String("fund", "", "comma-separated wallet addresses to give SOL and devnet USDC at start (dev only; the devnet_fund RPC method does it later)")
	fundSOL := fs.Float64("fund-sol", 1, "SOL per --fund wallet")
	fundUSDC := fs.Float64("fund-usdc", 100, "USDC per --fund wallet (the simulator's devnet USDC, 6 decimals)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *batch < 1 || *batch > 100 {
		return errors.New("--batch must be 1..100")
	}
	log := newLogger(slog.LevelInfo)
	cfg := devnet.Config{Addr: *addr, Agents: *agents, Attestations: *atts, Batch: *batch, Rate: *rate,
		Seed: *seedN, SlotInterval: *slot, FinalityDepth: *depth, LogLimit: *logLimit, Logger: log}
	if p := firstNonEmpty(*program, os.Getenv("ATTESTD_PROGRAM_ID")); p != "" {
		pk, err := solana.PublicKeyFromBase58(p)
		if err != nil {
			return fmt.Errorf("program id %q: %w", p, err)
		}
		cfg.ProgramID = pk
	}
	wallets, err := parseWallets(*fund)
	if err != nil {
		return err
	}
	if *fundSOL < 0 || *fundSOL > 1000 || *fundUSDC < 0 || *fundUSDC > 1_000_000 {
		return errors.New("--fund-sol must be 0..1000 and --fund-usdc 0..1000000")
	}
	chain, err := devnet.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer chain.Close()
	for _, w := range wallets {
		f, err := chain.FundWallet(w, uint64(*fundSOL*float64(solana.LAMPORTS_PER_SOL)), uint64(*fundUSDC*1e6))
		if err != nil {
			return err
		}
		log.Info("funded", "wallet", w.String(), "lamports", f.Lamports, "usdc_account", f.USDCAccount.String(), "usdc_atomic", f.USDC)
	}
	log.Info("devnet ready", "ATTESTD_SOLANA_RPC_URL", chain.RPCURL(), "ATTESTD_SOLANA_WS_URL", chain.WSURL(),
		"transactions", len(chain.Transactions()))
	<-ctx.Done()
	return nil
}

// parseWallets reads --fund: comma-separated base58 addresses.
func parseWallets(s string) ([]solana.PublicKey, error) {
	var out []solana.PublicKey
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		pk, err := solana.PublicKeyFromBase58(part)
		if err != nil {
			return nil, fmt.Errorf("--fund: %q is not a base58 Solana address", part)
		}
		out = append(out, pk)
	}
	return out, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// startLocalDevnet starts the simulator inside `attestd local` (make run)
// unless ATTESTD_SOLANA_RPC_URL points at a chain already, and points the
// indexer and the health probe at it. The chain lives in dir/chain: the
// next `make run` continues it (same genesis hash, later slots, the same
// agents) instead of replaying it from slot 1. As the simulator is this
// command's own, the indexer may start over on it (ATTESTD_INDEXER_START_OVER)
// when the database was indexed from another chain (dir/chain deleted,
// or a database from before the chain was kept). The chain's slots come
// after afterSlot, the newest the database's data uses (the seeded demo
// data's), so stored and live data share one slot space. closeChain
// (never nil) stops the chain and returns once it saved.
func startLocalDevnet(ctx context.Context, env *settings.Overlay, dir string, afterSlot uint64, log *slog.Logger) (closeChain func(), err error) {
	closeChain = func() {}
	if env.Getenv("ATTESTD_SOLANA_RPC_URL") != "" {
		return closeChain, nil
	}
	cfg := devnet.Config{Addr: "127.0.0.1:8899", Agents: 10, Attestations: 2000, Batch: 8, Rate: 2, LogLimit: 10_000, Logger: log,
		StateDir: filepath.Join(dir, "chain"), AfterSlot: afterSlot}
	chain, err := devnet.Start(ctx, cfg)
	if err != nil {
		cfg.Addr = "" // 8899 taken: any free pair of ports
		chain, err = devnet.Start(ctx, cfg)
		if err != nil {
			return closeChain, fmt.Errorf("local devnet: %w", err)
		}
	}
	go func() { <-ctx.Done(); chain.Close() }()
	if env.Getenv("ATTESTD_INDEXER_START_OVER") == "" {
		env.Set("ATTESTD_INDEXER_START_OVER", "1")
	}
	env.Set("ATTESTD_SOLANA_RPC_URL", chain.RPCURL())
	env.Set("ATTESTD_SOLANA_WS_URL", chain.WSURL())
	return chain.Close, localPayments(env, chain, filepath.Join(dir, "x402"), log)
}

// localPayments turns pay per request on for make run, on the simulator:
// a generated fee payer with SOL, a payTo wallet whose devnet USDC account
// exists, a demo payer with SOL and 100 USDC, and the receipt key, their
// keypairs kept under dir. Left alone when ATTESTD_X402_PAY_TO is set.
func localPayments(env *settings.Overlay, chain *devnet.Chain, dir string, log *slog.Logger) error {
	if env.Getenv("ATTESTD_X402_PAY_TO") != "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("local payments: %w", err)
	}
	keys := map[string]solana.PrivateKey{}
	for _, name := range []string{"fee-payer", "pay-to", "payer", "receipt"} {
		file := filepath.Join(dir, name+".json")
		key, err := keyfile.Keypair(file)
		k := solana.PrivateKey(key)
		if err != nil {
			k = solana.NewWallet().PrivateKey
			if err := devnet.WriteKeypair(file, k); err != nil {
				return fmt.Errorf("local payments: %w", err)
			}
		}
		keys[name] = k
	}
	if _, err := chain.FundWallet(keys["fee-payer"].PublicKey(), 10*solana.LAMPORTS_PER_SOL, 0); err != nil {
		return err
	}
	if _, err := chain.FundWallet(keys["pay-to"].PublicKey(), 0, 0); err != nil { // its USDC account must exist
		return err
	}
	payer, err := chain.FundWallet(keys["payer"].PublicKey(), solana.LAMPORTS_PER_SOL, 100_000_000)
	if err != nil {
		return err
	}
	env.Set("ATTESTD_X402_PAY_TO", keys["pay-to"].PublicKey().String())
	env.Set("ATTESTD_X402_NETWORK", "solana-devnet")
	env.Set("ATTESTD_X402_FEE_PAYER_KEYPAIR", filepath.Join(dir, "fee-payer.json"))
	env.Set("ATTESTD_X402_RPC_URL", chain.RPCURL())
	if env.Getenv(receipt.EnvKey) == "" && env.Getenv(receipt.EnvKeyFile) == "" {
		// Paid answers carry receipts signed with this key (an Ed25519
		// keypair file, as receipt.ParseKey reads it).
		env.Set(receipt.EnvKeyFile, filepath.Join(dir, "receipt.json"))
	}
	log.Info("pay per request on the local chain", "pay_to", keys["pay-to"].PublicKey().String(),
		"fee_payer", keys["fee-payer"].PublicKey().String(), "demo_payer_keypair", filepath.Join(dir, "payer.json"),
		"demo_payer", payer.Wallet.String(), "demo_payer_usdc", x402.FormatAmount(payer.USDC, x402.USDCDecimals),
		"fund_more", `curl -s `+chain.RPCURL()+` -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"devnet_fund","params":["<address>"]}'`)
	return nil
}
