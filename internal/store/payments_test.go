package store

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestSamePaymentClaimedAtOnce: requests presenting one payment at the same
// moment get one claim and ErrPaymentUsed for the rest, never another
// error, although they collide on the transaction signature too (a
// unique index ON CONFLICT does not arbitrate).
func TestSamePaymentClaimedAtOnce(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	for round := 0; round < 30; round++ {
		p := Payment{Network: "solana:test", Asset: "mint", PayTo: "payto", Payer: "payer", Amount: 1, Route: "/r", Node: "n",
			TxSignature: "sig" + string(rune('a'+round))}
		p.MessageHash[0], p.MessageHash[1] = byte(round), 0x5a
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = st.ClaimPayment(ctx, p)
			}()
		}
		close(start)
		wg.Wait()
		claimed := 0
		for _, err := range errs {
			switch {
			case err == nil:
				claimed++
			case !errors.Is(err, ErrPaymentUsed):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if claimed != 1 {
			t.Fatalf("round %d: %d claims of one payment", round, claimed)
		}
	}
}

// TestReconcileOneActorPerRow: while one reconciler holds an open row,
// another skips it (SKIP LOCKED) instead of deciding it too; a verdict is
// recorded once, and decided rows are not offered again.
func TestReconcileOneActorPerRow(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	p := Payment{Network: "solana:test", Asset: "mint", PayTo: "payto", Payer: "payer", Amount: 1, Route: "/r", Node: "n",
		TxSignature: "reconcile-sig", RequestFingerprint: make([]byte, 32), Request: "GET /r", LastValidHeight: 150}
	p.MessageHash[0], p.MessageHash[1] = 0xee, 0x01
	id, err := st.ClaimPayment(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan int)
	go func() {
		n, err := st.ReconcilePayments(ctx, 10, func(_ context.Context, got Payment) Verdict {
			if got.ID != id {
				return Verdict{}
			}
			close(holding)
			<-release
			return Verdict{Status: PaymentSettled}
		})
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	<-holding
	n, err := st.ReconcilePayments(ctx, 10, func(_ context.Context, got Payment) Verdict {
		if got.ID == id {
			t.Error("a second reconciler was offered a row another holds")
		}
		return Verdict{}
	})
	if err != nil || n != 0 {
		t.Fatalf("second reconciler: %d %v", n, err)
	}
	close(release)
	if n := <-done; n != 1 {
		t.Fatalf("first reconciler decided %d rows", n)
	}
	got, err := st.PaymentByMessage(ctx, p.MessageHash)
	if err != nil || got.Status != PaymentSettled || got.SettledAt == nil || got.LastValidHeight != 150 || got.Request != "GET /r" {
		t.Fatalf("row %+v %v", got, err)
	}
	if _, err := st.ReconcilePayments(ctx, 10, func(_ context.Context, got Payment) Verdict {
		if got.ID == id {
			t.Error("a settled row was offered again")
		}
		return Verdict{}
	}); err != nil {
		t.Fatal(err)
	}
	// The node that sent it learns the outcome late: the same status is not an error, another is.
	if err := st.FinishPayment(ctx, id, PaymentSettled, "reconcile-sig", ""); err != nil {
		t.Fatalf("late settle of a settled row: %v", err)
	}
	if err := st.FinishPayment(ctx, id, PaymentReleased, "", "x"); !errors.Is(err, ErrPaymentUsed) {
		t.Fatalf("release of a settled row: %v", err)
	}
}
