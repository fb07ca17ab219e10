package x402fiber_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gagliardetto/solana-go"
)

// hostileCase is one payment an attacker (or a broken wallet) sends.
type hostileCase struct {
	name   string
	build  func(t *testing.T) string // the PAYMENT-SIGNATURE value
	status int
	reason string
}

// TestHostilePayments runs the hostile matrix over HTTP: every case is a
// 400 or 402 naming its reason, never a 500, never content, never money
// moved, never a settled ledger row.
func TestHostilePayments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	q := pr.Accepts[0]
	mint := devnet.DevnetUSDCMint
	fee := f.FeePayer.PublicKey()
	payer := f.Payer
	src, _ := x402.AssociatedTokenAccount(payer.PublicKey(), mint, solana.TokenProgramID)
	dst := f.PayToATA
	otherMint, err := f.chain.CreateMint(6)
	testenv.Must(t, err, "mint")
	otherSrc, _ := f.chain.MintTo(otherMint, payer.PublicKey(), 1_000_000)
	otherDst, _ := f.chain.MintTo(otherMint, f.PayTo, 0)
	stranger := f.chain.NewKeypair().PublicKey()
	strangerATA, _ := f.chain.MintTo(mint, stranger, 0)
	feeATA, _ := f.chain.MintTo(mint, fee, 1_000_000)
	broke := f.chain.NewKeypair()
	_, _ = f.chain.MintTo(mint, broke.PublicKey(), 10)
	brokeSrc, _ := x402.AssociatedTokenAccount(broke.PublicKey(), mint, solana.TokenProgramID)
	memo := func(s string) solana.Instruction { return solana.NewInstruction(solana.MemoProgramID, nil, []byte(s)) }
	std := func(transfer solana.Instruction, extra ...solana.Instruction) []solana.Instruction {
		return append([]solana.Instruction{x402.ComputeUnitLimit(20000), x402.ComputeUnitPrice(1), transfer, memo(fmt.Sprint(time.Now().UnixNano()))}, extra...)
	}
	good := func() solana.Instruction {
		return x402.TransferChecked(solana.TokenProgramID, src, mint, dst, payer.PublicKey(), price, 6)
	}
	wrap := func(t *testing.T, wire []byte) string { return header(t, x402.NewPaymentPayload(pr.Resource, q, wire)) }
	sign := func(t *testing.T, ixs []solana.Instruction, signers ...solana.PrivateKey) []byte {
		t.Helper()
		if len(signers) == 0 {
			signers = []solana.PrivateKey{payer}
		}
		wire, err := x402.SignPayment(ixs, f.chain.LatestBlockhash(), fee, signers...)
		testenv.Must(t, err, "sign")
		return wire
	}
	expired := f.chain.LatestBlockhash()
	expiredWire, err := x402.SignPayment(std(good()), expired, fee, payer)
	testenv.Must(t, err, "sign")
	f.chain.AdvanceSlots(160)

	cases := []hostileCase{
		{"amount one less", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, src, mint, dst, payer.PublicKey(), price-1, 6))))
		}, 402, x402.ReasonAmountMismatch},
		{"amount one more", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, src, mint, dst, payer.PublicKey(), price+1, 6))))
		}, 402, x402.ReasonAmountMismatch},
		{"wrong mint", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, otherSrc, otherMint, otherDst, payer.PublicKey(), price, 6))))
		}, 402, x402.ReasonMintMismatch},
		{"wrong destination", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, src, mint, strangerATA, payer.PublicKey(), price, 6))))
		}, 402, x402.ReasonRecipientMismatch},
		{"payTo wallet as destination", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, src, mint, f.PayTo, payer.PublicKey(), price, 6))))
		}, 402, x402.ReasonRecipientMismatch},
		{"Token-2022 program for a Token mint", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.Token2022ProgramID, src, mint, dst, payer.PublicKey(), price, 6))))
		}, 402, x402.ReasonRecipientMismatch},
		{"wrong decimals", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, src, mint, dst, payer.PublicKey(), price, 9))))
		}, 402, x402.ReasonDecimalsMismatch},
		{"fee payer as authority", func(t *testing.T) string {
			// The attacker hopes we co-sign a transfer of our own USDC.
			ixs := std(x402.TransferChecked(solana.TokenProgramID, feeATA, mint, dst, fee, price, 6))
			ixs[3] = solana.NewInstruction(solana.MemoProgramID, solana.AccountMetaSlice{solana.Meta(payer.PublicKey()).SIGNER()}, []byte("x"))
			return wrap(t, sign(t, ixs))
		}, 402, x402.ReasonFeePayerTransfer},
		{"fee payer as source", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, fee, mint, dst, payer.PublicKey(), price, 6))))
		}, 402, x402.ReasonFeePayerTransfer},
		{"fee payer drained by an extra System transfer", func(t *testing.T) string {
			drain := solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{solana.Meta(fee).WRITE().SIGNER(), solana.Meta(stranger).WRITE()},
				[]byte{2, 0, 0, 0, 0, 202, 154, 59, 0, 0, 0, 0})
			return wrap(t, sign(t, std(good(), drain)))
		}, 402, x402.ReasonFeePayerInAccounts},
		{"extra instruction", func(t *testing.T) string {
			extra := solana.NewInstruction(solana.SystemProgramID, solana.AccountMetaSlice{solana.Meta(payer.PublicKey()).WRITE().SIGNER(), solana.Meta(stranger).WRITE()},
				[]byte{2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
			return wrap(t, sign(t, std(good(), extra)))
		}, 402, x402.ReasonUnknownInstruction},
		{"second transfer", func(t *testing.T) string {
			return wrap(t, sign(t, std(good(), x402.TransferChecked(solana.TokenProgramID, src, mint, strangerATA, payer.PublicKey(), 1, 6))))
		}, 402, x402.ReasonUnknownInstruction},
		{"no compute budget", func(t *testing.T) string {
			return wrap(t, sign(t, []solana.Instruction{good(), memo("a"), memo("b")}))
		}, 402, x402.ReasonComputeLimit},
		{"compute unit price too high", func(t *testing.T) string {
			ixs := std(good())
			ixs[1] = x402.ComputeUnitPrice(5_000_000)
			return wrap(t, sign(t, ixs))
		}, 402, x402.ReasonComputePriceTooHigh},
		{"compute unit limit too high", func(t *testing.T) string {
			ixs := std(good())
			ixs[0] = x402.ComputeUnitLimit(1_400_000)
			return wrap(t, sign(t, ixs))
		}, 402, x402.ReasonComputeLimit},
		{"two memos", func(t *testing.T) string { return wrap(t, sign(t, std(good(), memo("again")))) }, 402, x402.ReasonMemoCount},
		{"third signer", func(t *testing.T) string {
			third := f.chain.NewKeypair()
			ixs := std(good())
			ixs[3] = solana.NewInstruction(solana.MemoProgramID, solana.AccountMetaSlice{solana.Meta(third.PublicKey()).SIGNER()}, []byte("x"))
			return wrap(t, sign(t, ixs, payer, third))
		}, 402, x402.ReasonSigners},
		{"bad signature", func(t *testing.T) string {
			wire := sign(t, std(good()))
			wire[1+64+5] ^= 0x40
			return wrap(t, wire)
		}, 402, x402.ReasonSignature},
		{"unsigned", func(t *testing.T) string {
			wire := sign(t, std(good()))
			copy(wire[1+64:1+128], make([]byte, 64))
			return wrap(t, wire)
		}, 402, x402.ReasonSignature},
		{"expired blockhash", func(t *testing.T) string { return wrap(t, expiredWire) }, 402, verifier.ReasonBlockhashExpired},
		{"unknown blockhash", func(t *testing.T) string {
			wire, err := x402.SignPayment(std(good()), solana.Hash{1, 2, 3}, fee, payer)
			testenv.Must(t, err, "sign")
			return wrap(t, wire)
		}, 402, verifier.ReasonBlockhashExpired},
		{"payer without the funds", func(t *testing.T) string {
			return wrap(t, sign(t, std(x402.TransferChecked(solana.TokenProgramID, brokeSrc, mint, dst, broke.PublicKey(), price, 6)), broke))
		}, 402, verifier.ReasonSimulationFailed},
		{"another fee payer", func(t *testing.T) string {
			wire, err := x402.SignPayment(std(good()), f.chain.LatestBlockhash(), stranger, payer)
			testenv.Must(t, err, "sign")
			return wrap(t, wire)
		}, 402, x402.ReasonFeePayerMismatch},
		{"echoed requirements with a lower amount", func(t *testing.T) string {
			low := q
			low.Amount = "1"
			return header(t, x402.NewPaymentPayload(pr.Resource, low, sign(t, std(good()))))
		}, 402, x402.ReasonRequirementsMismatch},
		{"echoed requirements for another network", func(t *testing.T) string {
			other := q
			other.Network = x402.Mainnet.CAIP2
			return header(t, x402.NewPaymentPayload(pr.Resource, other, sign(t, std(good()))))
		}, 402, x402.ReasonRequirementsMismatch},
		{"scheme upto", func(t *testing.T) string {
			other := q
			other.Scheme = "upto"
			return header(t, x402.NewPaymentPayload(pr.Resource, other, sign(t, std(good()))))
		}, 402, x402.ReasonUnsupportedScheme},
		{"version 1 in PAYMENT-SIGNATURE", func(t *testing.T) string {
			p := x402.NewPaymentPayload(pr.Resource, q, sign(t, std(good())))
			p.X402Version = 1
			return header(t, p)
		}, 400, x402.ReasonInvalidVersion},
		{"garbage base64", func(t *testing.T) string { return "!!!not base64???" }, 400, x402.ReasonInvalidPayload},
		{"base64 of garbage", func(t *testing.T) string { return encode([]byte("\x00\xffnot json")) }, 400, x402.ReasonInvalidPayload},
		{"base64 of a JSON array", func(t *testing.T) string { return encode([]byte(`[1,2,3]`)) }, 400, x402.ReasonInvalidPayload},
		{"two JSON objects", func(t *testing.T) string {
			b, _ := json.Marshal(x402.NewPaymentPayload(pr.Resource, q, sign(t, std(good()))))
			return encode(append(b, b...))
		}, 400, x402.ReasonInvalidPayload},
		{"transaction not base64", func(t *testing.T) string {
			p := x402.NewPaymentPayload(pr.Resource, q, nil)
			p.Payload.Transaction = "%%%%"
			return header(t, p)
		}, 400, x402.ReasonInvalidPayload},
		{"transaction missing", func(t *testing.T) string { return header(t, x402.NewPaymentPayload(pr.Resource, q, nil)) }, 400, x402.ReasonInvalidPayload},
		{"transaction truncated", func(t *testing.T) string {
			wire := sign(t, std(good()))
			return wrap(t, wire[:len(wire)-7])
		}, 400, x402.ReasonInvalidTransaction},
		{"transaction with trailing bytes", func(t *testing.T) string {
			return wrap(t, append(sign(t, std(good())), 0))
		}, 400, x402.ReasonInvalidTransaction},
		{"transaction of 1233 bytes", func(t *testing.T) string { return wrap(t, make([]byte, 1233)) }, 400, x402.ReasonInvalidTransaction},
		{"65535 signatures claimed", func(t *testing.T) string { return wrap(t, []byte{0xff, 0xff, 0x03, 1, 2, 3}) }, 400, x402.ReasonInvalidTransaction},
		{"message version 1", func(t *testing.T) string {
			wire := sign(t, std(good()))
			wire[1+128] = 0x81
			return wrap(t, wire)
		}, 400, x402.ReasonInvalidTransaction},
		{"header of 9 KiB", func(t *testing.T) string { return strings.Repeat("A", 9<<10) }, 400, x402.ReasonInvalidPayload},
	}
	before := f.balance(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := n.pay(t, http.MethodGet, path, nil, tc.build(t))
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if got := reason(t, r); got != tc.reason {
				t.Fatalf("reason %q, want %q: %s", got, tc.reason, r.Body)
			}
			if r.Header.Get(x402.HeaderPaymentRequired) == "" {
				t.Error("a refusal without the payment instructions")
			}
		})
	}
	if f.balance(t) != before {
		t.Fatalf("the hostile matrix moved money: %d -> %d", before, f.balance(t))
	}
	if s := ledger(t, n.Store, store.PaymentSettled); len(s) != 0 {
		t.Fatalf("settled rows: %+v", s)
	}
	if pending := ledger(t, n.Store, store.PaymentPending); len(pending) != 0 {
		t.Fatalf("pending rows left behind: %+v", pending)
	}
	t.Logf("hostile matrix: %d cases", len(cases))
	// After all of that, an honest payment still works.
	if r := n.pay(t, http.MethodGet, path, nil, f.wallet(t, n.challenge(t, http.MethodGet, path, nil))); r.Status != http.StatusOK {
		t.Fatalf("honest payment after the matrix: %d %s", r.Status, r.Body)
	}
}

// A 1 MB payment header never reaches the handler: the server refuses the
// request's headers (431 HEADERS_TOO_LARGE, the envelope), and the node
// keeps serving.
func TestOneMegabyteHeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(n.Root, "http://"), 5*time.Second)
	testenv.Must(t, err, "dial")
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "GET /api/v1/premium/full-history/%s HTTP/1.1\r\nHost: x\r\n%s: ", f.agent, x402.HeaderPaymentSignature)
		chunk := strings.Repeat("A", 64<<10)
		for i := 0; i < 16; i++ {
			if _, err := w.WriteString(chunk); err != nil {
				return
			}
		}
		_, _ = w.WriteString("\r\n\r\n")
		_ = w.Flush()
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	testenv.Must(t, err, "read response")
	defer res.Body.Close()
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&env)
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge || env.Error.Code != "HEADERS_TOO_LARGE" || !strings.Contains(env.Error.Message, "headers") {
		t.Fatalf("1 MB header: %d %+v", res.StatusCode, env)
	}
	if r := n.Get(t, "/health"); r.Status != http.StatusOK {
		t.Fatalf("node after a 1 MB header: %d", r.Status)
	}
}
