package x402fiber_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
)

// shortSettle is a self-settling configuration that stops waiting for a
// settlement after a second (the least ATTESTD_X402_SETTLE_TIMEOUT allows).
func (f *fixture) shortSettle() verifier.Config {
	cfg := f.config()
	cfg.SettleTimeout = time.Second
	return cfg
}

func (f *fixture) reconciler(t *testing.T, st *store.Store) *verifier.Reconciler {
	t.Helper()
	r, err := verifier.NewReconciler(verifier.ReconcilerOptions{Ledger: st, RPCURL: f.chain.RPCURL()})
	testenv.Must(t, err, "reconciler")
	return r
}

func onlyRow(t *testing.T, st *store.Store) store.Payment {
	t.Helper()
	all := ledger(t, st, "")
	if len(all) != 1 {
		t.Fatalf("ledger rows: %+v", all)
	}
	return all[0]
}

// A transaction that lands after the settle timeout: the request is told
// the settlement is pending (402, no content), the row stays pending with
// the transaction's last valid height, and once the transaction lands the
// same payment presented again returns the answer it bought, with no new
// charge, as many times as asked, on any node; for another request it is
// refused.
func TestLateLandingIsAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.node(t, f.shortSettle(), nil), f.node(t, f.shortSettle(), nil)
	path := "/premium/full-history/" + f.agent + "?limit=5"
	payment := f.wallet(t, a.challenge(t, http.MethodGet, path, nil))
	before := f.balance(t)
	f.chain.HoldNextTransactions(1)
	r := a.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusPaymentRequired || reason(t, r) != verifier.ReasonNotConfirmed {
		t.Fatalf("held settlement: %d %s", r.Status, r.Body)
	}
	row := onlyRow(t, a.Store)
	if row.Status != store.PaymentPending || row.TxSignature == "" || row.LastValidHeight == 0 || len(row.RequestFingerprint) != 32 {
		t.Fatalf("row after the settle timeout: %+v", row)
	}
	// Still in flight: presented again, it is pending (no second send, no charge).
	r = b.pay(t, http.MethodGet, path, nil, payment)
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "pending") {
		t.Fatalf("presented while in flight: %d %s", r.Status, r.Body)
	}
	if landed := f.chain.LandHeld(); len(landed) != 1 || landed[0].String() != row.TxSignature {
		t.Fatalf("landed %v, want %s", landed, row.TxSignature)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("payTo %d -> %d after landing", before, got)
	}
	for i, n := range []*paidNode{b, a, b} {
		r = n.pay(t, http.MethodGet, path, nil, payment)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data"`) {
			t.Fatalf("presented again (%d) after landing: %d %s", i, r.Status, r.Body)
		}
		sr, err := x402.DecodeSettleResponse(r.Header.Get(x402.HeaderPaymentResponse))
		testenv.Must(t, err, "PAYMENT-RESPONSE")
		if !sr.Success || sr.Transaction != row.TxSignature {
			t.Fatalf("settle response %+v, want the landed %s", sr, row.TxSignature)
		}
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("presenting again charged: %d -> %d", before, got)
	}
	if row = onlyRow(t, a.Store); row.Status != store.PaymentSettled || row.SettledAt == nil {
		t.Fatalf("row after landing: %+v", row)
	}
	// The same payment for other parameters, or another route of the same
	// price, buys nothing.
	for _, other := range []string{"/premium/full-history/" + f.agent + "?limit=6", "/premium/full-history/" + f.agent} {
		r = a.pay(t, http.MethodGet, other, nil, payment)
		if r.Status != http.StatusConflict || r.ErrorCode() != "PAYMENT_REPLAYED" {
			t.Fatalf("presented for %s: %d %s", other, r.Status, r.Body)
		}
	}
	r = a.pay(t, http.MethodGet, "/premium/forensic-report/"+f.agent, nil, payment)
	if r.Status != http.StatusPaymentRequired && r.Status != http.StatusConflict {
		t.Fatalf("presented for another route: %d %s", r.Status, r.Body)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("refused presentations moved money: %d -> %d", before, got)
	}
}

// The reconciler decides rows nobody presents again: a transaction that
// lands late is settled, one that never lands is released once the chain
// is past its last valid block height (and not before).
func TestReconcilerSettlesAndReleases(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.shortSettle(), nil)
	rec := f.reconciler(t, n.Store)
	path := "/premium/full-history/" + f.agent
	before := f.balance(t)

	// Lands late.
	f.chain.HoldNextTransactions(1)
	if r := n.pay(t, http.MethodGet, path, nil, f.wallet(t, n.challenge(t, http.MethodGet, path, nil))); r.Status != http.StatusPaymentRequired {
		t.Fatalf("held: %d %s", r.Status, r.Body)
	}
	if got, err := rec.RunOnce(context.Background()); err != nil || got != 0 {
		t.Fatalf("reconciled an in-flight row: %d %v", got, err)
	}
	f.chain.LandHeld()
	if got, err := rec.RunOnce(context.Background()); err != nil || got != 1 {
		t.Fatalf("reconcile after landing: %d %v", got, err)
	}
	if s := ledger(t, n.Store, store.PaymentSettled); len(s) != 1 || f.balance(t) != before+price {
		t.Fatalf("settled rows %+v, balance %d", s, f.balance(t))
	}

	// Never lands.
	f.chain.HoldNextTransactions(1)
	payment := f.wallet(t, n.challenge(t, http.MethodGet, path, nil))
	if r := n.pay(t, http.MethodGet, path, nil, payment); r.Status != http.StatusPaymentRequired {
		t.Fatalf("held: %d %s", r.Status, r.Body)
	}
	f.chain.DropHeld()
	pending := ledger(t, n.Store, store.PaymentPending)
	if len(pending) != 1 || pending[0].LastValidHeight == 0 {
		t.Fatalf("pending rows %+v", pending)
	}
	if got, _ := rec.RunOnce(context.Background()); got != 0 {
		t.Fatal("released a row whose blockhash is still valid")
	}
	f.chain.AdvanceSlots(int(pending[0].LastValidHeight-f.chain.Slot()) + 1)
	if got, err := rec.RunOnce(context.Background()); err != nil || got != 1 {
		t.Fatalf("reconcile after expiry: %d %v", got, err)
	}
	rel := ledger(t, n.Store, store.PaymentReleased)
	if len(rel) != 1 || !strings.Contains(rel[0].Reason, "never landed") {
		t.Fatalf("released rows %+v", rel)
	}
	if got := f.balance(t); got != before+price {
		t.Fatalf("the never-landed payment was charged: %d -> %d", before, got)
	}
	// Presented again, it is refused for what it is (expired), not as a replay.
	if r := n.pay(t, http.MethodGet, path, nil, payment); r.Status != http.StatusPaymentRequired {
		t.Fatalf("expired payment presented again: %d %s", r.Status, r.Body)
	}
}

// An invalid request with a payment is refused with its 400 before any
// payment work: no ledger row, no claim, nothing charged; the same payment
// then buys a valid request.
func TestInvalidRequestBeforePayment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	history := "/premium/full-history/" + f.agent
	payment := f.wallet(t, n.challenge(t, http.MethodGet, history, nil))
	bulkPayment := f.wallet(t, n.challenge(t, http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":["x"]}`)))
	before := f.balance(t)
	cases := []struct {
		name, method, path, body, payment string
	}{
		{"bad limit", http.MethodGet, history + "?limit=abc", "", payment},
		{"unknown parameter", http.MethodGet, history + "?nope=1", "", payment},
		{"bad agent", http.MethodGet, "/premium/full-history/not-an-address", "", payment},
		{"bad range", http.MethodGet, "/premium/forensic-report/" + f.agent + "?from=yesterday", "", payment},
		{"body not an object", http.MethodPost, "/premium/bulk-verify", `[1,2]`, bulkPayment},
		{"ids not strings", http.MethodPost, "/premium/bulk-verify", `{"ids":[5]}`, bulkPayment},
	}
	for _, tc := range cases {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := n.pay(t, tc.method, tc.path, body, tc.payment)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" {
			t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	if all := ledger(t, n.Store, ""); len(all) != 0 {
		t.Fatalf("invalid requests left ledger rows: %+v", all)
	}
	if got := f.balance(t); got != before {
		t.Fatalf("invalid requests moved money: %d -> %d", before, got)
	}
	if r := n.pay(t, http.MethodGet, history, nil, payment); r.Status != http.StatusOK {
		t.Fatalf("the payment after the invalid requests: %d %s", r.Status, r.Body)
	}
}

// The payment-identifier extension: an id used by one payment refuses
// another payment.
func TestPaymentIdentifierReused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	withID := func(id string) string {
		pr := n.challenge(t, http.MethodGet, path, nil)
		q := pr.Accepts[0]
		wire, err := x402.BuildExact(q, x402.Payment{Payer: f.Payer, Blockhash: f.chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		p := x402.NewPaymentPayload(pr.Resource, q, wire)
		p.Extensions = map[string]json.RawMessage{x402.ExtensionPaymentIdentifier: json.RawMessage(`{"info":{"id":"` + id + `"}}`)}
		return header(t, p)
	}
	first := withID("order_0123456789abcdef")
	if r := n.pay(t, http.MethodGet, path, nil, first); r.Status != http.StatusOK {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	if r := n.pay(t, http.MethodGet, path, nil, first); r.Status != http.StatusOK {
		t.Fatalf("first presented again: %d %s", r.Status, r.Body)
	}
	r := n.pay(t, http.MethodGet, path, nil, withID("order_0123456789abcdef"))
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "identifier") {
		t.Fatalf("id reused by another payment: %d %s", r.Status, r.Body)
	}
	if r := n.pay(t, http.MethodGet, path, nil, withID("short")); r.Status != http.StatusBadRequest {
		t.Fatalf("malformed id: %d %s", r.Status, r.Body)
	}
	if s := ledger(t, n.Store, store.PaymentSettled); len(s) != 1 || s[0].PaymentID != "order_0123456789abcdef" {
		t.Fatalf("settled rows %+v", s)
	}
}
