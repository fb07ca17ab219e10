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
// agents, no replayed traffic, transactions not finalized yet still known)
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
	if n := len(second.Transactions()); n >= txs1 {
		t.Fatalf("the second start lists %d program transactions, the first had %d: traffic replayed?", n, txs1)
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
