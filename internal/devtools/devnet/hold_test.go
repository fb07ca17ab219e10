package devnet

import (
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
)

// A held transaction is accepted by sendTransaction but unknown to
// getSignatureStatuses until it lands; one whose blockhash expired while
// held never lands.
func TestHeldTransactions(t *testing.T) {
	c, cl := start(t, Config{})
	ctx := tctx(t)
	payer := c.NewKeypair()
	c.Fund(payer.PublicKey(), solana.LAMPORTS_PER_SOL)
	send := func(lamports uint64) solana.Signature {
		t.Helper()
		ix := system.NewTransferInstruction(lamports, payer.PublicKey(), c.NewKeypair().PublicKey()).Build()
		tx, err := solana.NewTransaction([]solana.Instruction{ix}, c.LatestBlockhash(), solana.TransactionPayer(payer.PublicKey()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer }); err != nil {
			t.Fatal(err)
		}
		sig, err := cl.SendTransaction(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	known := func(sig solana.Signature) bool {
		t.Helper()
		st, err := cl.GetSignatureStatuses(ctx, true, sig)
		if err != nil {
			t.Fatal(err)
		}
		return st.Value[0] != nil
	}
	c.HoldNextTransactions(1)
	late := send(1_000_000)
	if known(late) || len(c.Held()) != 1 {
		t.Fatal("a held transaction landed at once")
	}
	if now := send(2_000_000); !known(now) {
		t.Fatal("the hold outlived its count")
	}
	if landed := c.LandHeld(); len(landed) != 1 || landed[0] != late || !known(late) {
		t.Fatalf("LandHeld %v", landed)
	}
	c.HoldNextTransactions(1)
	never := send(3_000_000)
	c.AdvanceSlots(blockhashValidity + 1)
	if landed := c.LandHeld(); len(landed) != 0 || known(never) {
		t.Fatalf("an expired transaction landed: %v", landed)
	}
	if b, err := cl.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentConfirmed); err != nil || b.Value != solana.LAMPORTS_PER_SOL-3_000_000-2*LamportsPerSignature {
		t.Fatalf("payer balance %v %v", b, err)
	}
}
