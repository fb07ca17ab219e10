package x402

import (
	"testing"

	"github.com/gagliardetto/solana-go"
)

// ReadTransfer reads what a landed payment paid, and refuses what is not
// a payment to these terms' payTo of their asset.
func TestReadTransfer(t *testing.T) {
	wire, terms := payment(t)
	tx, err := DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	other := *terms
	other.PayTo = solana.NewWallet().PublicKey()
	if err := other.Prepare(); err != nil {
		t.Fatal(err)
	}
	mint := *terms
	mint.Asset = Mainnet.USDC
	if err := mint.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		terms *ExactTerms
		ok    bool
	}{
		{"a payment to payTo", terms, true},
		{"a payment to another payTo", &other, false},
		{"a payment of another asset", &mint, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := ReadTransfer(tx, c.terms)
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
			if c.ok && (tr.Amount != 10000 || tr.Payer != tx.Keys[1] || tr.MessageHash != sha256Sum(tx.Message)) {
				t.Fatalf("read %+v", tr)
			}
		})
	}
	// Any amount is read (the price may have changed since it was paid).
	moved := *terms
	moved.Amount = 1
	if tr, err := ReadTransfer(tx, &moved); err != nil || tr.Amount != 10000 {
		t.Fatalf("with another price: %+v %v", tr, err)
	}
	short := *tx
	short.Instructions = tx.Instructions[:2]
	if _, err := ReadTransfer(&short, terms); err == nil {
		t.Fatal("a transaction without a transfer was read")
	}
}
