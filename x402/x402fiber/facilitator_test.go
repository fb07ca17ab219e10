package x402fiber_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// standIn is a local facilitator: with mode "ok" it checks payments with
// package x402 and settles them on the simulator with its own fee payer;
// the other modes misbehave as real ones do.
type standIn struct {
	srv      *httptest.Server
	key      solana.PrivateKey
	mode     atomic.Value // string
	settles  atomic.Int32
	verifies atomic.Int32
}

func (f *fixture) facilitator(t *testing.T) *standIn {
	t.Helper()
	s := &standIn{key: f.chain.NewKeypair()}
	f.chain.Fund(s.key.PublicKey(), solana.LAMPORTS_PER_SOL)
	s.mode.Store("ok")
	cl := rpc.New(f.chain.RPCURL())
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := s.mode.Load().(string)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/supported":
			network := x402.Devnet.CAIP2
			if mode == "other-network" {
				network = x402.Mainnet.CAIP2
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kinds": []any{map[string]any{"x402Version": 2, "scheme": "exact",
				"network": network, "extra": map[string]any{"feePayer": s.key.PublicKey().String()}}}})
			return
		}
		var req struct {
			PaymentPayload      x402.PaymentPayload `json:"paymentPayload"`
			PaymentRequirements x402.Requirements   `json:"paymentRequirements"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad request", 400)
			return
		}
		if r.URL.Path == "/verify" {
			s.verifies.Add(1)
			switch mode {
			case "verify-nonsense":
				_, _ = w.Write([]byte("<html>welcome</html>"))
				return
			case "verify-500-valid":
				w.WriteHeader(500)
				_, _ = w.Write([]byte(`{"isValid":true}`))
				return
			case "verify-invalid":
				_, _ = w.Write([]byte(`{"isValid":false,"invalidReason":"insufficient_funds","payer":"x"}`))
				return
			}
			_, err := s.check(req.PaymentPayload, req.PaymentRequirements)
			_ = json.NewEncoder(w).Encode(map[string]any{"isValid": err == nil})
			return
		}
		s.settles.Add(1)
		switch mode {
		case "settle-nonsense":
			_, _ = w.Write([]byte(`{"success":true}`))
			return
		case "settle-failed":
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"success":false,"errorReason":"transaction_failed","transaction":"","network":"x"}`))
			return
		case "settle-slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		tx, err := s.check(req.PaymentPayload, req.PaymentRequirements)
		if err != nil {
			_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "errorReason": "invalid_payload", "transaction": "", "network": x402.Devnet.CAIP2})
			return
		}
		sig, _ := s.key.Sign(tx.Message)
		wire := tx.WithSignature(0, sig)
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if _, err := cl.SendEncodedTransaction(ctx, base64.StdEncoding.EncodeToString(wire)); err != nil {
			_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "errorReason": "transaction_failed", "transaction": "", "network": x402.Devnet.CAIP2})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "transaction": sig.String(), "network": x402.Devnet.CAIP2,
			"payer": tx.Keys[1].String()})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) check(p x402.PaymentPayload, q x402.Requirements) (*x402.Transaction, error) {
	raw, err := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	if err != nil {
		return nil, err
	}
	tx, err := x402.DecodeTransaction(raw)
	if err != nil {
		return nil, err
	}
	amount, _ := q.AmountUnits()
	terms := x402.ExactTerms{FeePayer: s.key.PublicKey(), PayTo: solana.MustPublicKeyFromBase58(q.PayTo),
		Asset: solana.MustPublicKeyFromBase58(q.Asset), Amount: amount, Decimals: 6}
	if err := terms.Prepare(); err != nil {
		return nil, err
	}
	if _, cerr := x402.CheckExact(tx, &terms); cerr != nil {
		return nil, cerr
	}
	return tx, nil
}

func (f *fixture) facilitatorConfig(s *standIn) verifier.Config {
	c := f.config()
	c.FeePayer, c.FacilitatorURL, c.FacilitatorTimeout, c.SettleTimeout = nil, s.srv.URL, 2*time.Second, 2*time.Second
	return c
}

func TestFacilitatorSettles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.facilitator(t)
	n := f.node(t, f.facilitatorConfig(s), nil)
	path := "/premium/full-history/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	if pr.Accepts[0].Extra.FeePayer != s.key.PublicKey().String() {
		t.Fatalf("fee payer %s, want the facilitator's", pr.Accepts[0].Extra.FeePayer)
	}
	before := f.balance(t)
	r := n.pay(t, http.MethodGet, path, nil, f.wallet(t, pr))
	if r.Status != http.StatusOK {
		t.Fatalf("paid through facilitator: %d %s", r.Status, r.Body)
	}
	sr, err := x402.DecodeSettleResponse(r.Header.Get(x402.HeaderPaymentResponse))
	testenv.Must(t, err, "PAYMENT-RESPONSE")
	if !sr.Success || f.balance(t) != before+price || s.verifies.Load() != 1 || s.settles.Load() != 1 {
		t.Fatalf("settle %+v balance %d verifies %d settles %d", sr, f.balance(t), s.verifies.Load(), s.settles.Load())
	}
	if rows := ledger(t, n.Store, store.PaymentSettled); len(rows) != 1 || rows[0].TxSignature != sr.Transaction {
		t.Fatalf("ledger %+v", rows)
	}
}

// A facilitator that is down or answers nonsense never releases content:
// before the handler the request gets 503 (nothing charged), after it a
// 402 with a failed PAYMENT-RESPONSE.
func TestFacilitatorMisbehaves(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.facilitator(t)
	n := f.node(t, f.facilitatorConfig(s), nil)
	path := "/premium/full-history/" + f.agent
	before := f.balance(t)
	for _, tc := range []struct {
		mode, code, reason string
		status             int
		settleResponse     bool
	}{
		{"verify-nonsense", "UNAVAILABLE", "", 503, false},
		{"verify-500-valid", "UNAVAILABLE", "", 503, false},
		{"verify-invalid", "PAYMENT_REQUIRED", verifier.ReasonFacilitatorRefused, 402, false},
		{"settle-nonsense", "PAYMENT_REQUIRED", verifier.ReasonFacilitatorDown, 402, true},
		{"settle-failed", "PAYMENT_REQUIRED", verifier.ReasonSettleFailed, 402, true},
		{"settle-slow", "PAYMENT_REQUIRED", verifier.ReasonFacilitatorDown, 402, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s.mode.Store(tc.mode)
			pr := n.challenge(t, http.MethodGet, path, nil)
			r := n.pay(t, http.MethodGet, path, nil, f.wallet(t, pr))
			if r.Status != tc.status || r.ErrorCode() != tc.code || strings.Contains(string(r.Body), `"data"`) {
				t.Fatalf("status %d %s", r.Status, r.Body)
			}
			if tc.reason != "" {
				if got := reason(t, r); got != tc.reason {
					t.Fatalf("reason %q, want %q", got, tc.reason)
				}
			}
			if h := r.Header.Get(x402.HeaderPaymentResponse); tc.settleResponse {
				sr, err := x402.DecodeSettleResponse(h)
				if err != nil || sr.Success || sr.ErrorReason == "" {
					t.Fatalf("PAYMENT-RESPONSE %q: %+v %v", h, sr, err)
				}
			} else if h != "" {
				t.Fatalf("PAYMENT-RESPONSE before any settlement: %q", h)
			}
		})
	}
	// Down: the server is gone.
	s.srv.Close()
	pr := n.challenge(t, http.MethodGet, path, nil)
	r := n.pay(t, http.MethodGet, path, nil, f.wallet(t, pr))
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.ErrorMessage(), "facilitator") {
		t.Fatalf("facilitator down: %d %s", r.Status, r.Body)
	}
	if f.balance(t) != before {
		t.Fatalf("money moved: %d -> %d", before, f.balance(t))
	}
	if rows := ledger(t, n.Store, store.PaymentSettled); len(rows) != 0 {
		t.Fatalf("settled rows %+v", rows)
	}
}

// A facilitator that does not settle our network is a configuration error
// at start; one that is unreachable at start leaves payable routes at 503
// until it answers.
func TestFacilitatorAtStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.facilitator(t)
	s.mode.Store("other-network")
	_, err := verifier.New(context.Background(), verifier.Deps{Config: f.facilitatorConfig(s), Ledger: f.env.Store})
	if err == nil || !strings.Contains(err.Error(), "does not settle") {
		t.Fatalf("other network: %v", err)
	}
	s.srv.Close()
	n := f.node(t, f.facilitatorConfig(s), nil)
	r := n.Do(t, http.MethodGet, "/premium/full-history/"+f.agent, nil, nil)
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != "UNAVAILABLE" {
		t.Fatalf("unreachable facilitator: %d %s", r.Status, r.Body)
	}
}
