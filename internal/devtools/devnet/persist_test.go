package devnet

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
)

// TestStateDirContinuesTheChain: a simulator started again on the same
// state directory continues the chain (same genesis, a later slot, the same
// agents, no replayed traffic, every transaction still known)
// and records new attestations; a fresh directory is another chain.
func TestStateDirContinuesTheChain(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	genesis := func(c *Chain) string {
		cl := rpc.New(c.RPCURL())
		defer cl.Close()
		h, err := cl.GetGenesisHash(ctx)
		if err != nil {
			t.Fatalf("getGenesisHash: %v", err)
		}
		return h.String()
	}
	cfg := Config{StateDir: dir, Agents: 3, Attestations: 30, Batch: 10, SlotInterval: -1, FinalityDepth: 8}
	first, _ := start(t, cfg)
	first.AdvanceSlots(20)
	recent, err := first.Generate(ctx, 3, 5, 5) // lands in the last slot: not finalized at Close
	if err != nil {
		t.Fatal(err)
	}
	g1, slot1, agents1 := genesis(first), first.Slot(), first.Agents()
	txs1 := len(first.Transactions())
	first.Close()

	second, cl := start(t, cfg)
	if g := genesis(second); g != g1 {
		t.Fatalf("genesis changed across a restart: %s, was %s", g, g1)
	}
	if second.Slot() <= slot1 {
		t.Fatalf("second start at slot %d, the first stopped at %d", second.Slot(), slot1)
	}
	agents2 := second.Agents()
	if len(agents2) != len(agents1) || agents2[0].PDA != agents1[0].PDA {
		t.Fatalf("agents not kept: %d, were %d", len(agents2), len(agents1))
	}
	if n := len(second.Transactions()); n != txs1 {
		t.Fatalf("the second start lists %d program transactions, the first had %d (more: traffic replayed; fewer: forgotten)", n, txs1)
	}
	st, err := cl.GetSignatureStatuses(ctx, true, recent.Records[0])
	if err != nil || st.Value[0] == nil {
		t.Fatalf("a transaction not finalized before the restart is unknown after it: %v %+v", err, st)
	}
	g, err := second.Generate(ctx, 3, 7, 7)
	if err != nil {
		t.Fatalf("new attestations after the restart: %v", err)
	}
	if len(g.Records) != 1 {
		t.Fatalf("generated %+v", g)
	}
	second.AdvanceSlots(10)
	if st, err := cl.GetSignatureStatuses(ctx, true, recent.Records[0]); err != nil || st.Value[0] == nil ||
		st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusFinalized {
		t.Fatalf("the kept transaction is not finalized later: %v", err)
	}
	second.Close()

	fresh, _ := start(t, Config{StateDir: t.TempDir(), SlotInterval: -1})
	if g := genesis(fresh); g == g1 {
		t.Fatalf("a fresh state directory has the same genesis %s", g)
	}
}

// TestCorruptStateIsRefused: a chain.json cut short, or with keys of the
// wrong length or the last slot, is refused with a reason naming the file,
// never a panic or a chain at slot 0.
func TestCorruptStateIsRefused(t *testing.T) {
	key := `"` + base64.StdEncoding.EncodeToString(make([]byte, 64)) + `"`
	for name, body := range map[string]string{
		"truncated": `{"version":1,"seed":5,"slot":`,
		"agent key": `{"version":1,"seed":5,"slot":3,"faucet":` + key + `,"agents":[{"index":0,"operator":` + key + `,"key":"AAAA"}]}`,
		"faucet":    `{"version":1,"seed":5,"slot":3,"faucet":"AAAA"}`,
		"last slot": `{"version":1,"seed":5,"slot":18446744073709551615,"faucet":` + key + `}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Start(context.Background(), Config{StateDir: dir, SlotInterval: -1, Addr: "127.0.0.1:0"})
		if err == nil {
			c.Close()
			t.Errorf("%s: a corrupt chain.json was accepted", name)
		} else if !strings.Contains(err.Error(), stateFile) {
			t.Errorf("%s: %v, want the file named", name, err)
		}
	}
}

// TestStateDirKeepsFinalizedTransactions: what a chain finalized before a
// restart is still there after it, at the same slot and finalized
// (getSignatureStatuses, getTransaction, getSignaturesForAddress, the
// events), across several restarts; what a save left half-written past
// the ledger's counted bytes is ignored and written over. An indexer
// whose confirmed rows the chain finalized while it was stopped finds
// them, rather than taking them for a fork.
func TestStateDirKeepsFinalizedTransactions(t *testing.T) {
	dir := t.TempDir()
	ctx := tctx(t)
	cfg := Config{StateDir: dir, Agents: 2, Attestations: 12, Batch: 3, SlotInterval: -1, FinalityDepth: 4}
	first, _ := start(t, cfg)
	first.AdvanceSlots(2)
	later, err := first.Generate(ctx, 2, 4, 4)
	testMust(t, err, "generate")
	first.AdvanceSlots(10) // everything finalized
	events := first.Events()
	sigs := first.Transactions()
	first.Close()
	if fi, err := os.Stat(filepath.Join(dir, ledgerFile)); err != nil || fi.Size() == 0 {
		t.Fatalf("no ledger written: %v", err)
	}
	// A save that stopped while appending left half a gzip member.
	f, err := os.OpenFile(filepath.Join(dir, ledgerFile), os.O_WRONLY|os.O_APPEND, 0)
	testMust(t, err, "open ledger")
	_, err = f.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0})
	testMust(t, err, "torn member")
	testMust(t, f.Close(), "close ledger")

	for round := 0; round < 2; round++ {
		c, cl := start(t, cfg)
		if got := c.Events(); len(got) != len(events) || got[0] != events[0] || got[len(got)-1] != events[len(events)-1] {
			t.Fatalf("round %d: %d events after the restart, %d before", round, len(got), len(events))
		}
		if got := c.Transactions(); len(got) < len(sigs) || got[0] != sigs[0] {
			t.Fatalf("round %d: %d program transactions after the restart, %d before", round, len(got), len(sigs))
		}
		st, err := cl.GetSignatureStatuses(ctx, true, sigs[0].Signature, later.Records[0])
		testMust(t, err, "getSignatureStatuses")
		for i, v := range st.Value {
			if v == nil || v.ConfirmationStatus != rpc.ConfirmationStatusFinalized {
				t.Fatalf("round %d: transaction %d finalized before the restart is %+v after it", round, i, v)
			}
		}
		if v := st.Value[0]; v.Slot != sigs[0].Slot {
			t.Fatalf("round %d: the first transaction moved from slot %d to %d", round, sigs[0].Slot, v.Slot)
		}
		max := uint64(0)
		tx, err := cl.GetTransaction(ctx, sigs[0].Signature, &rpc.GetTransactionOpts{MaxSupportedTransactionVersion: &max})
		if err != nil || tx == nil || tx.Slot != sigs[0].Slot {
			t.Fatalf("round %d: getTransaction of a finalized transaction after the restart: %v", round, err)
		}
		_, err = c.Generate(ctx, 2, 2, 2) // more, finalized and saved for the next round
		testMust(t, err, "generate")
		c.AdvanceSlots(6)
		events = c.Events()
		c.Close()
	}
}

// TestAfterSlot: a new chain opens the slot after Config.AfterSlot and
// lands its traffic past it; a saved chain stopped below it continues
// there with what it had.
func TestAfterSlot(t *testing.T) {
	ctx := tctx(t)
	dir := t.TempDir()
	c, _ := start(t, Config{StateDir: dir, Agents: 1, Attestations: 3, AfterSlot: 45_000})
	for _, tx := range c.Transactions() {
		if tx.Slot <= 45_000 {
			t.Fatalf("a transaction at slot %d, at or below AfterSlot", tx.Slot)
		}
	}
	if c.FinalizedSlot() < 45_000-4 {
		t.Fatalf("finalized slot %d of a chain after slot 45000", c.FinalizedSlot())
	}
	n := len(c.Transactions())
	c.Close()
	again, cl := start(t, Config{StateDir: dir, AfterSlot: 90_000})
	if again.Slot() != 90_001 || len(again.Transactions()) != n {
		t.Fatalf("continued at slot %d with %d transactions, want slot 90001 and %d", again.Slot(), len(again.Transactions()), n)
	}
	if _, err := again.Generate(ctx, 1, 1, 1); err != nil {
		t.Fatalf("traffic after the skip: %v", err)
	}
	h, err := cl.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil || h.Context.Slot != 90_001 {
		t.Fatalf("latest blockhash after the skip: %v %+v", err, h)
	}
}

func testMust(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestShortLedgerIsRefused: a chain.json counting more ledger bytes than
// the ledger file holds (the file deleted or cut) is refused, naming the
// ledger, rather than continued without the transactions it lost.
func TestShortLedgerIsRefused(t *testing.T) {
	dir := t.TempDir()
	c, _ := start(t, Config{StateDir: dir, Agents: 1, Attestations: 3, FinalityDepth: 2})
	c.AdvanceSlots(4)
	c.Close()
	path := filepath.Join(dir, ledgerFile)
	fi, err := os.Stat(path)
	testMust(t, err, "ledger")
	// In this order: the file is cut before it is deleted.
	for _, step := range []struct {
		name string
		cut  func() error
	}{
		{"cut", func() error { return os.Truncate(path, fi.Size()-3) }},
		{"deleted", func() error { return os.Remove(path) }},
	} {
		name, cut := step.name, step.cut
		testMust(t, cut(), name)
		c, err := Start(context.Background(), Config{StateDir: dir, SlotInterval: -1, Addr: "127.0.0.1:0"})
		if err == nil {
			c.Close()
			t.Fatalf("%s: a chain whose ledger lost transactions was continued", name)
		}
		if !strings.Contains(err.Error(), ledgerFile) {
			t.Errorf("%s: %v, want the ledger named", name, err)
		}
	}
}
