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
