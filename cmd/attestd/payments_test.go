package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/x402"
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
