package indexer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go/rpc"
)

// TestJudgeStatus: a chain with another genesis, or whose slot is far
// behind the checkpoint, is never synced, and the chain slot shown is the
// node's, not the checkpoint's.
func TestJudgeStatus(t *testing.T) {
	now := time.Now()
	cp := store.Checkpoint{Name: CheckpointName, Slot: 964, UpdatedAt: now}
	head := store.Checkpoint{Name: HeadCheckpointName, Slot: 964, UpdatedAt: now}
	base := statusInput{cp: cp, head: head, okCP: true, okHead: true, recordedGenesis: "GenA", chainGenesis: "GenA",
		chainSlot: 970, chainKnown: true, syncedLag: 150, staleAfter: 30 * time.Second, now: now}
	for _, tc := range []struct {
		name      string
		tweak     func(*statusInput)
		synced    bool
		chainSlot uint64
		lag       uint64
		reason    []string // substrings of NotSynced
	}{
		{name: "ok", synced: true, chainSlot: 970, lag: 6},
		{name: "genesis mismatch", tweak: func(in *statusInput) { in.chainGenesis = "GenB" },
			chainSlot: 970, lag: 6, reason: []string{"GenA", "GenB", "--start-over", "ATTESTD_SOLANA_RPC_URL"}},
		{name: "chain behind the checkpoint", tweak: func(in *statusInput) { in.chainSlot = 95 },
			chainSlot: 95, lag: 0, reason: []string{"slot 95", "slot 964", "--start-over"}},
		{name: "a node a few slots behind a load balancer", tweak: func(in *statusInput) { in.chainSlot = 960 },
			synced: true, chainSlot: 960, lag: 0},
		{name: "no genesis recorded yet (older database)", tweak: func(in *statusInput) { in.recordedGenesis = ""; in.chainGenesis = "GenB" },
			synced: true, chainSlot: 970, lag: 6},
		{name: "chain unknown: the head stands for it", tweak: func(in *statusInput) { in.chainKnown, in.chainSlot, in.chainGenesis = false, 0, "" },
			synced: true, chainSlot: 964, lag: 0},
		{name: "indexer far behind the chain", tweak: func(in *statusInput) { in.chainSlot = 2000 },
			chainSlot: 2000, lag: 1036, reason: []string{"1036 slots behind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			if tc.tweak != nil {
				tc.tweak(&in)
			}
			s := judgeStatus(in)
			if s.Synced != tc.synced || s.ChainSlot != tc.chainSlot || s.LagSlots != tc.lag {
				t.Fatalf("got synced %v chainSlot %d lag %d (%q), want %v %d %d", s.Synced, s.ChainSlot, s.LagSlots, s.NotSynced,
					tc.synced, tc.chainSlot, tc.lag)
			}
			if s.Synced != (s.NotSynced == "") {
				t.Fatalf("synced %v with reason %q", s.Synced, s.NotSynced)
			}
			for _, sub := range tc.reason {
				if !strings.Contains(s.NotSynced, sub) {
					t.Fatalf("reason %q does not name %q", s.NotSynced, sub)
				}
			}
		})
	}
}

// counts is the indexed rows and the checkpoint's slot.
func counts(t *testing.T, st *store.Store) (atts, agents int, slot uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM attestations), (SELECT count(*) FROM agents)`).Scan(&atts, &agents), "count")
	cp, _, err := st.Checkpoint(ctx, CheckpointName)
	testenv.Must(t, err, "checkpoint")
	return atts, agents, cp.Slot
}

func genesisOf(t *testing.T, c *devnet.Chain) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := rpc.New(c.RPCURL())
	defer cl.Close()
	h, err := cl.GetGenesisHash(ctx)
	testenv.Must(t, err, "getGenesisHash")
	return h.String()
}

// indexA indexes a first chain exactly and until everything is finalized.
func indexA(t *testing.T, st *store.Store) *devnet.Chain {
	t.Helper()
	a := startChain(t, devnet.Config{Seed: 1, Agents: 3, Attestations: 300})
	r := startIndexer(t, st, a, nil)
	waitExact(t, st, a, 60*time.Second)
	testenv.WaitFor(t, "chain A finalized", 30*time.Second, func() bool { return unfinalized(t, st) == 0 })
	r.stop(t)
	return a
}

// TestOtherChainIsRefused: an indexer pointed at another chain (another
// genesis hash) writes nothing and stops with an error naming both hashes
// and the flag; the status reader says the same and is not synced.
func TestOtherChainIsRefused(t *testing.T) {
	st := newStore(t)
	a := indexA(t, st)
	atts, agents, slot := counts(t, st)
	b := startChain(t, devnet.Config{Seed: 2, Agents: 2, Attestations: 150})
	ga, gb := genesisOf(t, a), genesisOf(t, b)
	if ga == gb {
		t.Fatalf("two simulators with other seeds share genesis %s", ga)
	}
	r := startIndexer(t, st, b, nil)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the indexer on another chain did not stop")
	}
	if !IsChainMismatch(r.err) {
		t.Fatalf("indexer on another chain returned %v, want a chain mismatch", r.err)
	}
	for _, sub := range []string{ga, gb, "--start-over"} {
		if !strings.Contains(r.err.Error(), sub) {
			t.Fatalf("error %q does not name %q", r.err, sub)
		}
	}
	if a2, g2, s2 := counts(t, st); a2 != atts || g2 != agents || s2 != slot {
		t.Fatalf("rows or checkpoint changed: %d/%d/%d, were %d/%d/%d", a2, g2, s2, atts, agents, slot)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := NewStatusReader(st, b.RPCURL()).Read(ctx)
	testenv.Must(t, err, "read status")
	if s.Synced || !strings.Contains(s.NotSynced, ga) || !strings.Contains(s.NotSynced, gb) {
		t.Fatalf("status on another chain: %+v", s)
	}
}

// TestStartOver: told to start over, the indexer forgets the checkpoint,
// records the new chain and indexes it from its first transaction; the
// rows of the first chain stay.
func TestStartOver(t *testing.T) {
	st := newStore(t)
	indexA(t, st)
	atts, agents, _ := counts(t, st)
	b := startChain(t, devnet.Config{Seed: 2, Agents: 2, Attestations: 150})
	r := startIndexer(t, st, b, func(c *Config) { c.StartOver = true })
	testenv.WaitFor(t, "chain B indexed", 60*time.Second, func() bool { n, _, _ := counts(t, st); return n == atts+150 })
	a2, g2, _ := counts(t, st)
	if a2 != atts+150 || g2 != agents+2 {
		t.Fatalf("after starting over: %d attestations, %d agents; want %d and %d", a2, g2, atts+150, agents+2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, ok, err := st.ChainGenesis(ctx, CheckpointName)
	testenv.Must(t, err, "genesis")
	if gb := genesisOf(t, b); !ok || got != gb {
		t.Fatalf("recorded genesis %q (%v), want chain B's %s", got, ok, gb)
	}
	testenv.WaitFor(t, "synced on chain B", 30*time.Second, func() bool { return r.ix.Status().Synced })
	r.stop(t)
	// Starting over again on the same chain, not behind: nothing is forgotten.
	_, _, slot := counts(t, st)
	r = startIndexer(t, st, b, func(c *Config) { c.StartOver = true })
	testenv.WaitFor(t, "synced again", 30*time.Second, func() bool { return r.ix.Status().Synced })
	r.stop(t)
	if _, _, s := counts(t, st); s < slot {
		t.Fatalf("start over on the same chain moved the checkpoint back from %d to %d", slot, s)
	}
}

// TestChainBehindWaits: the same chain (same genesis) restarted from slot
// 0, replaying its first transactions, is behind the checkpoint: the
// indexer writes nothing and says why, with both slots, instead of
// claiming it is synced.
func TestChainBehindWaits(t *testing.T) {
	st := newStore(t)
	a := indexA(t, st)
	a.AdvanceSlots(1000)
	r := startIndexer(t, st, a, nil)
	testenv.WaitFor(t, "checkpoint past slot 1000", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		head, ok, _ := st.Checkpoint(ctx, HeadCheckpointName)
		return ok && head.Slot >= 1000
	})
	r.stop(t)
	a.Close()
	atts, agents, _ := counts(t, st)
	replay := startChain(t, devnet.Config{Seed: 1, Agents: 3, Attestations: 300, SlotInterval: -1})
	gen(t, replay, 3, 50, 10)
	r = startIndexer(t, st, replay, nil)
	testenv.WaitFor(t, "the indexer says the chain is behind", 30*time.Second, func() bool {
		return strings.Contains(r.ix.Status().NotSynced, "behind the indexer's checkpoint")
	})
	s := r.ix.Status()
	if s.Synced || s.ChainSlot != replay.Slot() || !strings.Contains(s.NotSynced, "--start-over") {
		t.Fatalf("indexer status on a chain behind: %+v (chain at %d)", s, replay.Slot())
	}
	time.Sleep(time.Second) // a few syncs: none may write
	if a2, g2, _ := counts(t, st); a2 != atts || g2 != agents {
		t.Fatalf("rows changed on a chain behind the checkpoint: %d/%d, were %d/%d", a2, g2, atts, agents)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := NewStatusReader(st, replay.RPCURL()).Read(ctx)
	testenv.Must(t, err, "read status")
	if rs.Synced || rs.ChainSlot != replay.Slot() || !strings.Contains(rs.NotSynced, "behind the indexer's checkpoint") {
		t.Fatalf("status reader on a chain behind: %+v (chain at %d)", rs, replay.Slot())
	}
	r.stop(t)
}
