package x402fiber_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
)

// TestPaymentReleasedAfterASlowStore: while the kept answers' table is
// locked, a paid request cannot keep its answer and is answered 503,
// nothing charged; the release that follows cannot reach the ledger
// either. Once the lock is gone, the release is retried on its own, the
// row says released, and the same payment, presented again, buys its
// answer: one charge, before its blockhash expires.
func TestPaymentReleasedAfterASlowStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	payment := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
	before := f.balance(t)

	ctx := context.Background()
	tx, err := n.Store.Pool().Begin(ctx)
	testenv.Must(t, err, "begin")
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	_, err = tx.Exec(ctx, "LOCK TABLE payment_answers IN ACCESS EXCLUSIVE MODE")
	testenv.Must(t, err, "lock payment_answers")

	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "nothing was charged") ||
		r.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("paid while the answers' table is locked: %d %s", r.Status, r.Body)
	}
	if got := f.balance(t); got != before {
		t.Fatalf("charged for an answer not given: %d -> %d", before, got)
	}
	testenv.Must(t, tx.Commit(ctx), "unlock")

	testenv.WaitForState(t, "the payment released", testenv.Patience, func() (bool, string) {
		rows := ledger(t, n.Store, "")
		if len(rows) != 1 {
			return false, fmt.Sprintf("%d rows", len(rows))
		}
		return rows[0].Status == store.PaymentReleased, string(rows[0].Status)
	})
	r = n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data"`) {
		t.Fatalf("the same payment once the store is back: %d %s", r.Status, r.Body)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("payTo %d -> %d, want one charge of %d", before, got, price)
	}
	if counter(t, n.reg, "attestd_x402_release_retries_total", "outcome", "released") != 1 {
		t.Errorf("release retries: %v", counter(t, n.reg, "attestd_x402_release_retries_total", "outcome", "released"))
	}
}
