package main

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
)

// payments list shows the ledger newest first with totals per status, and
// a released payment can be claimed again while a settled one cannot.
func TestPaymentsList(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.Database(t), store.Options{})
	testenv.Must(t, err, "open")
	defer st.Close()
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	p := store.Payment{MessageHash: [32]byte{1}, Network: x402.Devnet.CAIP2, Asset: x402.Devnet.USDC.String(), PayTo: "P",
		Payer: "payerA", Amount: 10000, Route: "/premium/bulk-verify", Node: "n1"}
	id, err := st.ClaimPayment(ctx, p)
	testenv.Must(t, err, "claim")
	testenv.Must(t, st.FinishPayment(ctx, id, store.PaymentSettled, "sigA", ""), "settle")
	if _, err := st.ClaimPayment(ctx, p); err != store.ErrPaymentUsed {
		t.Fatalf("settled payment claimed again: %v", err)
	}
	p.MessageHash, p.Payer = [32]byte{2}, "payerB"
	id2, err := st.ClaimPayment(ctx, p)
	testenv.Must(t, err, "claim 2")
	testenv.Must(t, st.FinishPayment(ctx, id2, store.PaymentReleased, "", "handler error"), "release")
	if _, err := st.ClaimPayment(ctx, p); err != nil {
		t.Fatalf("released payment not claimable: %v", err)
	}
	var out strings.Builder
	testenv.Must(t, listPayments(ctx, st, store.PaymentFilter{Since: time.Now().Add(-time.Hour)}, &out), "list")
	s := out.String()
	for _, want := range []string{"settled  0.01 USDC", "sigA", "payerB", "pending", "settled        1 payments  10000 atomic units",
		"pending        1 payments"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// payments receipt prints a settled payment's receipt, verified under the
// node's key; a receipt that does not verify, or none, is an error.
func TestPaymentsReceipt(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.Database(t), store.Options{})
	testenv.Must(t, err, "open")
	defer st.Close()
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	origin, err := config.ParseOrigin("https://attestd.test")
	testenv.Must(t, err, "origin")
	signer, err := receipt.NewSigner(ed25519.NewKeyFromSeed(make([]byte, 32)), origin)
	testenv.Must(t, err, "signer")
	other, err := receipt.NewSigner(ed25519.NewKeyFromSeed(append(make([]byte, 31), 9)), origin)
	testenv.Must(t, err, "other signer")
	tx := "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"
	p := store.Payment{MessageHash: [32]byte{7}, Network: x402.Devnet.CAIP2, Asset: x402.Devnet.USDC.String(), PayTo: "P",
		Payer: "payerA", Amount: 10000, Route: "/premium/bulk-verify", Node: "n1"}
	id, err := st.ClaimPayment(ctx, p)
	testenv.Must(t, err, "claim")
	var out strings.Builder
	if err := printReceipt(ctx, st, tx, signer, &out); err == nil || !strings.Contains(err.Error(), "no payment") {
		t.Fatalf("unknown transaction: %v", err)
	}
	testenv.Must(t, st.FinishPayment(ctx, id, store.PaymentSettled, tx, ""), "settle")
	if err := printReceipt(ctx, st, tx, signer, &out); err == nil || !strings.Contains(err.Error(), "no receipt") {
		t.Fatalf("no receipt: %v", err)
	}
	jws, err := signer.Sign(receipt.Payload{Amount: "10000", Asset: p.Asset, IssuedAt: 1763900000, Network: p.Network, Payer: "payerA",
		PayTo: "P", RequestDigest: strings.Repeat("a", 64), ResourceURL: origin.URL("/api/v1/premium/bulk-verify"),
		ResponseDigest: strings.Repeat("b", 64), Transaction: tx, Version: 1})
	testenv.Must(t, err, "sign")
	kept, err := st.SaveReceipt(ctx, id, jws)
	testenv.Must(t, err, "save")
	if again, _ := st.SaveReceipt(ctx, id, "other"); kept != jws || again != jws {
		t.Fatalf("the first receipt kept is the receipt: %q %q", kept, again)
	}
	testenv.Must(t, printReceipt(ctx, st, tx, signer, &out), "print")
	for _, want := range []string{jws, "verified under did:web:attestd.test#", `"transaction": "` + tx, "2025-11-23T"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := printReceipt(ctx, st, tx, other, &out); err == nil || !strings.Contains(out.String(), "DOES NOT VERIFY") {
		t.Fatalf("receipt under another key: %v", err)
	}
}
