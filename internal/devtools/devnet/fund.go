package devnet

import (
	"encoding/json"
	"fmt"

	"github.com/gagliardetto/solana-go"
)

// Funded is what Fund did for one wallet.
type Funded struct {
	Wallet       solana.PublicKey
	Lamports     uint64           // the wallet's balance now
	USDCAccount  solana.PublicKey // its USDC associated token account
	USDC         uint64           // that account's balance now, atomic units (6 decimals)
	AirdropTxSig solana.Signature // the SOL transfer (zero when no SOL was asked)
}

// FundWallet gives wallet lamports (a real System transfer from the
// faucet) and usdc atomic units of the simulator's devnet USDC (minted
// into its associated token account, created when missing, even for 0).
// It is the dev-only way to let any Solana wallet or x402 client pay.
func (c *Chain) FundWallet(wallet solana.PublicKey, lamports, usdc uint64) (Funded, error) {
	f := Funded{Wallet: wallet}
	if lamports > 0 {
		sig, err := c.Airdrop(wallet, lamports)
		if err != nil {
			return f, fmt.Errorf("devnet: fund %s with SOL: %w", wallet, err)
		}
		f.AirdropTxSig = sig
	}
	ata, err := c.MintTo(DevnetUSDCMint, wallet, usdc)
	if err != nil {
		return f, fmt.Errorf("devnet: fund %s with USDC: %w", wallet, err)
	}
	f.USDCAccount = ata
	if f.USDC, err = c.TokenBalance(ata); err != nil {
		return f, err
	}
	if a := c.GetAccount(wallet); a != nil {
		f.Lamports = a.Lamports
	}
	return f, nil
}

// maxFundLamports and maxFundUSDC bound one devnet_fund call.
const (
	maxFundLamports = 1_000 * solana.LAMPORTS_PER_SOL
	maxFundUSDC     = 1_000_000 * 1_000_000
)

// adminFund answers devnet_fund [address, {"lamports": n, "usdc": n}]:
// defaults 1 SOL and 100 USDC (100,000,000 atomic units).
func adminFund(c *Chain, params []json.RawMessage) (any, *rpcError) {
	key, err := paramPubkey(params, 0)
	if err != nil {
		return nil, err
	}
	p := struct {
		Lamports *uint64 `json:"lamports"`
		USDC     *uint64 `json:"usdc"`
	}{}
	if len(params) > 1 {
		if jerr := json.Unmarshal(params[1], &p); jerr != nil {
			return nil, invalidParams("want {\"lamports\": n, \"usdc\": n}: %v", jerr)
		}
	}
	lamports, usdc := uint64(solana.LAMPORTS_PER_SOL), uint64(100_000_000)
	if p.Lamports != nil {
		lamports = *p.Lamports
	}
	if p.USDC != nil {
		usdc = *p.USDC
	}
	if lamports > maxFundLamports || usdc > maxFundUSDC {
		return nil, invalidParams("at most %d lamports and %d USDC atomic units per call", uint64(maxFundLamports), uint64(maxFundUSDC))
	}
	f, ferr := c.FundWallet(key, lamports, usdc)
	if ferr != nil {
		return nil, &rpcError{Code: codeInternal, Message: ferr.Error()}
	}
	out := map[string]any{"wallet": f.Wallet.String(), "lamports": f.Lamports, "usdcMint": DevnetUSDCMint.String(),
		"usdcAccount": f.USDCAccount.String(), "usdc": f.USDC}
	if !f.AirdropTxSig.IsZero() {
		out["airdropSignature"] = f.AirdropTxSig.String()
	}
	return out, nil
}
