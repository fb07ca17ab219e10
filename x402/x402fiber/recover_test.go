package x402fiber_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
)

// A payment settled after the backup a database was restored from lost
// its ledger row and its kept answer with the database; its transfer is
// on chain. The reconciler's recovery finds it and records it (settled,
// recovered: the ledger again equals the chain, to the unit), once; the
// same payment presented again is refused with payment_answer_lost,
// never charged again and never answered anew.
func TestSettlementLostWithTheDatabaseIsRecovered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	ctx := context.Background()
	st := f.env.Store
	path := "/premium/full-history/" + f.agent + "?limit=3"
	payment := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
	if r := n.pay(t, http.MethodGet, path, nil, payment); r.Status != http.StatusOK {
		t.Fatalf("paid: %d %s", r.Status, r.Body)
	}
	charged := f.balance(t)
	var id int64
	var tx string
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT id, tx_signature FROM payments WHERE status = 'settled'`).Scan(&id, &tx), "the payment")
	before, err := st.PaymentByTransaction(ctx, tx)
	testenv.Must(t, err, "ledger row")

	// The restore: the row and its kept answer are gone.
	_, err = st.Pool().Exec(ctx, `DELETE FROM payments WHERE id = $1`, id)
	testenv.Must(t, err, "lose the row")
	f.chain.AdvanceSlots(64) // the transfer is finalized
	rc, err := verifier.NewReconciler(verifier.ReconcilerOptions{Ledger: st, RPCURL: f.chain.RPCURL(),
		Recover: verifier.RecoverTerms{PayTo: f.PayTo, Asset: devnet.DevnetUSDCMint, Network: x402.Devnet.CAIP2}})
	testenv.Must(t, err, "reconciler")
	added, err := rc.Recover(ctx)
	testenv.Must(t, err, "recover")
	if added != 1 {
		t.Fatalf("recovered %d payments, want 1", added)
	}
	got, err := st.PaymentByTransaction(ctx, tx)
	testenv.Must(t, err, "recovered row")
	if !got.Recovered || got.Status != "settled" || got.Amount != before.Amount || got.Payer != before.Payer ||
		got.MessageHash != before.MessageHash || got.PayTo != before.PayTo || got.Asset != before.Asset || got.Network != before.Network {
		t.Fatalf("recovered %+v\nlost      %+v", got, before)
	}
	var sum uint64
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT COALESCE(sum(amount), 0) FROM payments WHERE status = 'settled'`).Scan(&sum), "sum")
	if sum != charged {
		t.Fatalf("the ledger holds %d settled units, the chain's payTo %d", sum, charged)
	}
	if again, err := rc.Recover(ctx); err != nil || again != 0 {
		t.Fatalf("a second recovery added %d (%v)", again, err)
	}

	r := n.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusConflict || r.ErrorCode() != "PAYMENT_REPLAYED" || reason(t, r) != verifier.ReasonAnswerLost {
		t.Fatalf("presented again after the restore: %d %s", r.Status, r.Body)
	}
	if f.balance(t) != charged {
		t.Fatal("charged again")
	}
}
