package devnet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gagliardetto/solana-go"
)

func TestNewPaymentFundsItsAccounts(t *testing.T) {
	c, _ := start(t, Config{})
	p, err := c.NewPayment(7_000, 2_500_000)
	if err != nil {
		t.Fatal(err)
	}
	if a := c.GetAccount(p.FeePayer.PublicKey()); a == nil || a.Lamports != 7_000 {
		t.Fatalf("fee payer: %+v", a)
	}
	ata, _, _ := solana.FindAssociatedTokenAddress(p.PayTo, DevnetUSDCMint)
	if p.PayToATA != ata {
		t.Fatalf("payTo's account %s, want %s", p.PayToATA, ata)
	}
	if b, err := c.TokenBalance(p.PayToATA); err != nil || b != 0 {
		t.Fatalf("payTo's balance %d %v, want 0", b, err)
	}
	payerATA, _, _ := solana.FindAssociatedTokenAddress(p.Payer.PublicKey(), DevnetUSDCMint)
	if b, err := c.TokenBalance(payerATA); err != nil || b != 2_500_000 {
		t.Fatalf("payer's balance %d %v, want 2500000", b, err)
	}
	if p.PayTo == p.Payer.PublicKey() || p.PayTo == p.FeePayer.PublicKey() || p.Payer.PublicKey() == p.FeePayer.PublicKey() {
		t.Fatal("accounts are not distinct")
	}
}

func TestWriteKeypairReadsAsTheSolanaCLIs(t *testing.T) {
	key := solana.NewWallet().PrivateKey
	path := filepath.Join(t.TempDir(), "id.json")
	if err := WriteKeypair(path, key); err != nil {
		t.Fatal(err)
	}
	got, err := solana.PrivateKeyFromSolanaKeygenFile(path)
	if err != nil || !got.PublicKey().Equals(key.PublicKey()) {
		t.Fatalf("read back %v %v", got.PublicKey(), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", fi.Mode(), err)
	}
	if err := WriteKeypair(filepath.Join(path, "below-a-file"), key); err == nil {
		t.Fatal("writing below a file succeeded")
	}
}
