package x402

import (
	"bytes"
	"testing"

	"github.com/gagliardetto/solana-go"
)

// payment builds a valid payment and its terms.
func payment(t testing.TB) ([]byte, *ExactTerms) {
	t.Helper()
	payer, fee, payTo := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	q := Requirements{Scheme: SchemeExact, Network: Devnet.CAIP2, Amount: "10000", Asset: Devnet.USDC.String(), PayTo: payTo.String(),
		MaxTimeoutSeconds: 60, Extra: &Extra{FeePayer: fee.String()}}
	wire, err := BuildExact(q, Payment{Payer: payer, Blockhash: solana.Hash{9}, Decimals: 6})
	if err != nil {
		t.Fatal(err)
	}
	terms := &ExactTerms{FeePayer: fee, PayTo: payTo, Asset: Devnet.USDC, Amount: 10000, Decimals: 6}
	if err := terms.Prepare(); err != nil {
		t.Fatal(err)
	}
	return wire, terms
}

// TestCheckExactSuccessIsANilError: a passing payment's error is a nil
// error, not a nil *Error inside a non-nil interface.
func TestCheckExactSuccessIsANilError(t *testing.T) {
	wire, terms := payment(t)
	tx, err := DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CheckExact(tx, terms)
	if err != nil {
		t.Fatalf("a valid payment: %v (%T)", err, err)
	}
}

func TestBuildExactPassesCheckExact(t *testing.T) {
	wire, terms := payment(t)
	tx, err := DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	if !tx.Versioned || len(tx.Instructions) != 4 || tx.Header.NumRequiredSignatures != 2 || !bytes.Equal(tx.Message, wire[129:]) {
		t.Fatalf("decoded %+v", tx)
	}
	c, cerr := CheckExact(tx, terms)
	if cerr != nil {
		t.Fatal(cerr)
	}
	if c.Payer != tx.Keys[1] || c.TokenProgram != solana.TokenProgramID {
		t.Fatalf("checked %+v", c)
	}
	// Randomising the fee payer's empty slot keeps the replay key: it is
	// the message's hash, not the wire bytes'.
	other := tx.WithSignature(0, solana.Signature{1, 2, 3})
	tx2, _ := DecodeTransaction(other)
	c2, _ := CheckExact(tx2, terms)
	if c2 == nil || c2.MessageHash != c.MessageHash {
		t.Fatal("replay key depends on the fee payer's signature slot")
	}
	// A memo the terms require must be the one there.
	terms.Memo = "invoice-7"
	if _, cerr := CheckExact(tx, terms); cerr == nil {
		t.Fatal("memo: a wrong memo passed")
	} else if e, ok := AsError(cerr); !ok || e.Reason != ReasonMemoMismatch {
		t.Fatalf("memo: %v", cerr)
	}
}

func TestLighthouseGuardsAccepted(t *testing.T) {
	payer, fee, payTo := solana.NewWallet().PrivateKey, solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	terms := &ExactTerms{FeePayer: fee, PayTo: payTo, Asset: Devnet.USDC, Amount: 5, Decimals: 6}
	_ = terms.Prepare()
	src, _ := AssociatedTokenAccount(payer.PublicKey(), Devnet.USDC, solana.TokenProgramID)
	guard := func() solana.Instruction {
		return solana.NewInstruction(LighthouseProgramID, solana.AccountMetaSlice{solana.Meta(src)}, []byte{1, 2})
	}
	// Phantom's layout: guards before and after the transfer.
	ixs := []solana.Instruction{ComputeUnitLimit(40000), ComputeUnitPrice(10), guard(), guard(), guard(),
		TransferChecked(solana.TokenProgramID, src, Devnet.USDC, terms.Destination(solana.TokenProgramID), payer.PublicKey(), 5, 6),
		solana.NewInstruction(solana.MemoProgramID, nil, []byte("n")), guard()}
	wire, err := SignPayment(ixs, solana.Hash{1}, fee, payer)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	if _, cerr := CheckExact(tx, terms); cerr != nil {
		t.Fatal(cerr)
	}
	ixs = append(ixs[:7], guard(), guard())
	wire, _ = SignPayment(ixs, solana.Hash{1}, fee, payer)
	tx, _ = DecodeTransaction(wire)
	if _, cerr := CheckExact(tx, terms); cerr == nil {
		t.Fatal("five guards accepted")
	}
}

func TestDecodeTransactionRefuses(t *testing.T) {
	wire, _ := payment(t)
	for name, b := range map[string][]byte{
		"empty":                 {},
		"no signatures":         {0},
		"non-canonical count":   append([]byte{0x82, 0x00}, wire[1:]...),
		"count over 16 bits":    {0xff, 0xff, 0xff},
		"truncated":             wire[:len(wire)-1],
		"trailing":              append(append([]byte(nil), wire...), 1),
		"too long":              make([]byte, MaxTransactionSize+1),
		"more sigs than header": append([]byte{3}, append(make([]byte, 64), wire[1:]...)...),
	} {
		if _, err := DecodeTransaction(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAmounts(t *testing.T) {
	for in, want := range map[string]uint64{"0.01": 10000, "2": 2000000, "1.5": 1500000, "0.000001": 1} {
		if got, err := ParseAmount(in, 6); err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v", in, got, err)
		}
		if got := FormatAmount(want, 6); got != in {
			t.Errorf("FormatAmount(%d) = %q", want, got)
		}
	}
	for _, bad := range []string{"", "0", "0.0000001", "-1", "1e3", "1.2.3", ".5", "5.", "99999999999999999999"} {
		if _, err := ParseAmount(bad, 6); err == nil {
			t.Errorf("ParseAmount(%q) accepted", bad)
		}
	}
}

// BenchmarkVerifyPayment is the in-process part of verifying one payment:
// header decode, transaction decode and CheckExact (one Ed25519 verify).
func BenchmarkVerifyPayment(b *testing.B) {
	wire, terms := payment(b)
	q := Requirements{Scheme: SchemeExact, Network: Devnet.CAIP2, Amount: "10000", Asset: Devnet.USDC.String(), PayTo: terms.PayTo.String(),
		MaxTimeoutSeconds: 60, Extra: &Extra{FeePayer: terms.FeePayer.String()}}
	h, _ := EncodeHeader(NewPaymentPayload(ResourceInfo{URL: "http://127.0.0.1/x"}, q, wire))
	b.ReportAllocs()
	for b.Loop() {
		_, raw, err := DecodePaymentV2(h)
		if err != nil {
			b.Fatal(err)
		}
		tx, err := DecodeTransaction(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, cerr := CheckExact(tx, terms); cerr != nil {
			b.Fatal(cerr)
		}
	}
}
