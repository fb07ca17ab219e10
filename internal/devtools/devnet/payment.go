package devnet

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gagliardetto/solana-go"
)

// Payment is the accounts of x402 payments on the simulator: the
// service's fee payer and payTo (with its USDC account), and a payer
// (the agent) holding USDC.
type Payment struct {
	FeePayer solana.PrivateKey
	PayTo    solana.PublicKey
	PayToATA solana.PublicKey // payTo's USDC account, empty at first
	Payer    solana.PrivateKey
}

// NewPayment creates fresh payment accounts: the fee payer holds
// feeLamports, payTo an empty USDC account and the payer usdc atomic
// units (6 decimals).
func (c *Chain) NewPayment(feeLamports, usdc uint64) (Payment, error) {
	p := Payment{FeePayer: c.NewKeypair(), PayTo: c.NewKeypair().PublicKey(), Payer: c.NewKeypair()}
	c.Fund(p.FeePayer.PublicKey(), feeLamports)
	var err error
	if p.PayToATA, err = c.MintTo(DevnetUSDCMint, p.PayTo, 0); err != nil {
		return p, fmt.Errorf("devnet: payTo's token account: %w", err)
	}
	if _, err = c.FundWallet(p.Payer.PublicKey(), 0, usdc); err != nil {
		return p, fmt.Errorf("devnet: fund the payer: %w", err)
	}
	return p, nil
}

// WriteKeypair writes key to path as the Solana CLI keeps a keypair: a
// JSON array of its 64 bytes, readable by the owner only.
func WriteKeypair(path string, key solana.PrivateKey) error {
	ints := make([]int, len(key))
	for i, b := range key {
		ints[i] = int(b)
	}
	b, err := json.Marshal(ints)
	if err != nil {
		return fmt.Errorf("devnet: encode keypair: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("devnet: write keypair: %w", err)
	}
	return nil
}
