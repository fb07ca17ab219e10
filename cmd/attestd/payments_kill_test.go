package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
)

// A node killed (SIGKILL) between sending a payment's transaction and
// answering leaves a pending row; the reconciler in `attestd index`
// settles it within a minute once the transaction lands (and the payment
// presented again to another node returns the answer, with no new
// charge), or releases it once its blockhash expired without landing.
func TestPaymentKilledMidSettle(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	db := testenv.Database(t)
	redisURL, prefix := testenv.Redis(t)
	chain, chainEnv := startChain(t, devnet.Config{})
	accounts, err := chain.NewPayment(solana.LAMPORTS_PER_SOL, 1_000_000)
	testenv.Must(t, err, "payment accounts")
	payTo, payToATA, payer := accounts.PayTo, accounts.PayToATA, accounts.Payer
	keyFile := filepath.Join(t.TempDir(), "fee-payer.json")
	testenv.Must(t, devnet.WriteKeypair(keyFile, accounts.FeePayer), "write keypair")
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + db,
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn",
		"ATTESTD_X402_PAY_TO=" + payTo.String(), "ATTESTD_X402_NETWORK=solana-devnet", "ATTESTD_X402_FEE_PAYER_KEYPAIR=" + keyFile,
		"ATTESTD_X402_RPC_URL=" + chain.RPCURL(), "ATTESTD_X402_SETTLE_TIMEOUT=5m", "ATTESTD_X402_RECONCILE_INTERVAL=1s"}, chainEnv...)
	runCmd(t, bin, env, "migrate")
	startDaemon(t, bin, env, "index")
	st, err := store.Open(context.Background(), db, store.Options{})
	testenv.Must(t, err, "open store")
	defer st.Close()

	const route = "/premium/bulk-verify"
	body := []byte(`{"ids":["not-an-attestation"]}`)
	post := func(base, payment string, timeout time.Duration) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(http.MethodPost, base+route, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if payment != "" {
			req.Header.Set(x402.HeaderPaymentSignature, payment)
		}
		res, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res, b, err
	}
	pay := func(base string) string {
		res, b, err := post(base, "", 10*time.Second)
		testenv.Must(t, err, "challenge")
		if res.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("unpaid: %d %s", res.StatusCode, b)
		}
		pr, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
		testenv.Must(t, err, "PAYMENT-REQUIRED")
		wire, err := x402.BuildExact(pr.Accepts[0], x402.Payment{Payer: payer, Blockhash: chain.LatestBlockhash(), Decimals: 6})
		testenv.Must(t, err, "build payment")
		h, err := x402.EncodeHeader(x402.NewPaymentPayload(pr.Resource, pr.Accepts[0], wire))
		testenv.Must(t, err, "encode payment")
		return h
	}
	// killMidSettle sends the paid request to a fresh node, waits until its
	// transaction was sent (held by the chain), then kills the node.
	killMidSettle := func(payment string, base string, pid int) store.Payment {
		t.Helper()
		chain.HoldNextTransactions(1)
		go func() { _, _, _ = post(base, payment, time.Minute) }()
		testenv.WaitFor(t, "the node sends the payment's transaction", 30*time.Second, func() bool { return len(chain.Held()) > 0 })
		testenv.Must(t, syscall.Kill(pid, syscall.SIGKILL), "kill -9 serve")
		ps, err := st.ListPayments(context.Background(), store.PaymentFilter{Status: store.PaymentPending})
		testenv.Must(t, err, "list")
		if len(ps) != 1 || ps[0].TxSignature != chain.Held()[0].String() {
			t.Fatalf("pending rows after the kill: %+v", ps)
		}
		return ps[0]
	}
	waitStatus := func(id int64, want store.PaymentStatus) store.Payment {
		t.Helper()
		var got store.Payment
		testenv.WaitForState(t, fmt.Sprintf("payment %d %s", id, want), testenv.Patience, testenv.Every(200*time.Millisecond, func() (bool, string) {
			ps, err := st.ListPayments(context.Background(), store.PaymentFilter{})
			testenv.Must(t, err, "list")
			for _, p := range ps {
				if p.ID == id && p.Status == want {
					got = p
					return true, ""
				}
			}
			return false, fmt.Sprintf("payments %+v", ps)
		}))
		return got
	}
	balance := func() uint64 {
		b, err := chain.TokenBalance(payToATA)
		testenv.Must(t, err, "balance")
		return b
	}

	// Lands after the kill: settled by the reconciler, answered again.
	base, pid := serveProcess(t, bin, env)
	payment := pay(base)
	row := killMidSettle(payment, base, pid)
	if landed := chain.LandHeld(); len(landed) != 1 {
		t.Fatalf("landed %v", landed)
	}
	waitStatus(row.ID, store.PaymentSettled)
	if got := balance(); got != 20_000 {
		t.Fatalf("payTo holds %d, want one payment of 20000", got)
	}
	base2, pid2 := serveProcess(t, bin, env)
	res, b, err := post(base2, payment, 30*time.Second)
	testenv.Must(t, err, "present again")
	if res.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"data"`)) {
		t.Fatalf("presented again after the reconciler settled it: %d %s", res.StatusCode, b)
	}
	if sr, err := x402.DecodeSettleResponse(res.Header.Get(x402.HeaderPaymentResponse)); err != nil || sr.Transaction != row.TxSignature {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	if got := balance(); got != 20_000 {
		t.Fatalf("presenting again charged: payTo holds %d", got)
	}

	// Never lands: released by the reconciler once the blockhash expired.
	row = killMidSettle(pay(base2), base2, pid2)
	chain.DropHeld()
	chain.AdvanceSlots(int(row.LastValidHeight-chain.Slot()) + 1)
	waitStatus(row.ID, store.PaymentReleased)
	if got := balance(); got != 20_000 {
		t.Fatalf("a payment that never landed was charged: payTo holds %d", got)
	}
	out := runCmd(t, bin, env, "payments", "list")
	for _, want := range []string{"settled        1 payments", "released       1 payments", "pending        0 payments",
		"POST /api/v1/premium/bulk-verify", row.TxSignature} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("payments list lacks %q:\n%s", want, out)
		}
	}
}
