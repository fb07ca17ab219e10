package indexer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/batchsize"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// TestBackfill10k: 10,000 attestations in 199 transactions (99 of 100, 100
// of 1) from 10 agents, indexed from scratch, exactly, then finalized.
func TestBackfill10k(t *testing.T) {
	c := startChain(t, devnet.Config{})
	gen(t, c, 10, 9900, 100)
	gen(t, c, 10, 100, 1)
	if n := len(c.Transactions()); n != 10+99+100 {
		t.Fatalf("%d transactions", n)
	}
	st := newStore(t)
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 90*time.Second)
	if got := r.ix.Ingested(); got != 10_000 {
		t.Fatalf("ingested %d", got)
	}
	testenv.WaitFor(t, "every row finalized", 30*time.Second, func() bool { return unfinalized(t, st) == 0 })

	// Status as API processes read it.
	sr := NewStatusReader(st, c.RPCURL())
	s, err := sr.Read(context.Background())
	testenv.Must(t, err, "read status")
	if s.LastIndexedSlot == 0 || s.LastIndexedAt == nil || s.ChainSlot < s.LastIndexedSlot {
		t.Fatalf("status %+v", s)
	}
	testenv.WaitFor(t, "synced status", 10*time.Second, func() bool {
		s, err := sr.Read(context.Background())
		return err == nil && s.Synced
	})
	r.stop(t)
}

// TestLiveFaults runs one live indexer through the faults in turn and
// checks the exact set after each.
func TestLiveFaults(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 3, Attestations: 300, Batch: 50})
	st := newStore(t)
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 30*time.Second)
	ctx := context.Background()
	testenv.WaitFor(t, "websocket up", 10*time.Second, func() bool { return r.ix.wsUp.Load() })

	t.Run("failed transaction", func(t *testing.T) {
		sig, err := c.FailTransaction(ctx, 0)
		testenv.Must(t, err, "fail")
		gen(t, c, 3, 20, 10) // something after it, so we know it was passed over
		waitExact(t, st, c, 20*time.Second)
		var n int
		testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE tx_signature = $1`, sig.String()).Scan(&n), "count")
		if n != 0 {
			t.Fatalf("%d rows of a failed transaction", n)
		}
	})
	t.Run("foreign program data", func(t *testing.T) {
		sig, err := c.ForeignEvent(ctx, 1)
		testenv.Must(t, err, "foreign")
		waitExact(t, st, c, 20*time.Second)
		var n, idx int
		testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*), max(event_index) FROM attestations WHERE tx_signature = $1`, sig.String()).Scan(&n, &idx), "count")
		if n != 1 || idx != 0 {
			t.Fatalf("foreign tx: %d rows, index %d", n, idx)
		}
	})
	t.Run("duplicate delivery and polling", func(t *testing.T) {
		c.DuplicateDelivery(true)
		defer c.DuplicateDelivery(false)
		for i := 0; i < 5; i++ {
			gen(t, c, 3, 7, 3)
			r.ix.Trigger() // a poll racing the notifications
		}
		waitExact(t, st, c, 20*time.Second)
	})
	t.Run("websocket dropped mid-stream", func(t *testing.T) {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if _, err := c.Generate(ctx, 3, 5, 5); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		time.Sleep(100 * time.Millisecond)
		c.RefuseWebsockets(true) // reconnects fail for a while: polling carries on
		c.DropConnections()
		time.Sleep(400 * time.Millisecond)
		c.RefuseWebsockets(false)
		time.Sleep(200 * time.Millisecond)
		c.DropConnections()
		time.Sleep(200 * time.Millisecond)
		close(done)
		wg.Wait()
		waitExact(t, st, c, 20*time.Second)
		testenv.WaitFor(t, "websocket back", 10*time.Second, func() bool { return r.ix.wsUp.Load() })
	})
	t.Run("revocation and policy update", func(t *testing.T) {
		_, err := c.UpdatePolicyRoot(ctx, 2, [32]byte{7, 7, 7})
		testenv.Must(t, err, "update")
		_, err = c.RevokeAgent(ctx, 2)
		testenv.Must(t, err, "revoke")
		waitExact(t, st, c, 20*time.Second)
		var kinds string
		testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT string_agg(kind, ',' ORDER BY at, event_index) FROM agent_events`).Scan(&kinds), "events")
		if kinds != "policy_updated,revoked" {
			t.Fatalf("agent events %q", kinds)
		}
	})
	testenv.WaitFor(t, "every row finalized", 30*time.Second, func() bool { return unfinalized(t, st) == 0 })
	r.stop(t)
}

// TestForkDropsConfirmed: a confirmed transaction is indexed, a fork drops
// it before finality, and its rows (and counters) go once the chain
// finalizes past its slot; the others are finalized.
func TestForkDropsConfirmed(t *testing.T) {
	c := startChain(t, devnet.Config{SlotInterval: -1, FinalityDepth: 5, Agents: 2, Attestations: 40, Batch: 20})
	st := newStore(t)
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 30*time.Second)
	g := gen(t, c, 2, 30, 10)
	c.AdvanceSlots(1)
	g2 := gen(t, c, 2, 10, 10) // lands after the one we drop
	waitExact(t, st, c, 20*time.Second)
	dropped := g.Records[1]
	testenv.Must(t, c.DropTransaction(dropped), "drop")
	// The store still has it (confirmed) until the chain finalizes past it.
	c.AdvanceSlots(10)
	waitExact(t, st, c, 20*time.Second)
	testenv.WaitFor(t, "every row finalized", 20*time.Second, func() bool { return unfinalized(t, st) == 0 })
	var n int
	ctx := context.Background()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE tx_signature = $1`, dropped.String()).Scan(&n), "count")
	if n != 0 || len(g2.Records) != 1 {
		t.Fatalf("%d rows of the dropped transaction remain", n)
	}
	r.stop(t)
}

// TestRestartMidBackfill stops the indexer in the middle of a backfill and
// starts another: no gap, no duplicate.
func TestRestartMidBackfill(t *testing.T) {
	c := startChain(t, devnet.Config{})
	gen(t, c, 5, 3000, 10)
	st := newStore(t)
	small := func(cfg *Config) { cfg.ChunkTxs = 10; cfg.Concurrency = 2 }
	first := startIndexer(t, st, c, small)
	testenv.WaitFor(t, "part of the backfill", 60*time.Second, func() bool { return first.ix.Ingested() >= 300 })
	first.stop(t)
	got0, _ := stored(t, st)
	if len(got0) >= 3000 {
		t.Skipf("backfill finished before the stop (%d rows); nothing to resume", len(got0))
	}
	cp, ok, err := st.Checkpoint(context.Background(), CheckpointName)
	if err != nil || !ok {
		t.Fatalf("no checkpoint after a partial backfill: %v", err)
	}
	second := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 60*time.Second)
	if got := second.ix.Ingested(); int(got) != 3000-len(got0) {
		t.Fatalf("%d rows before the restart, second stored %d: want 3000 in all (checkpoint was slot %d)", len(got0), got, cp.Slot)
	}
	second.stop(t)
}

// TestTwoIndexers: two processes' worth of indexers on one database; one
// writes, and when it dies the other takes over within 10 s and carries on
// with no gap and no duplicate.
func TestTwoIndexers(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 4, Attestations: 1000, Batch: 25})
	st := newStore(t)
	a := startIndexer(t, st, c, nil)
	b := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 60*time.Second)
	if a.ix.IsLeader() == b.ix.IsLeader() {
		t.Fatalf("leaders: a %v, b %v", a.ix.IsLeader(), b.ix.IsLeader())
	}
	leader, follower := a, b
	if b.ix.IsLeader() {
		leader, follower = b, a
	}
	if follower.ix.Ingested() != 0 {
		t.Fatalf("the follower wrote %d attestations", follower.ix.Ingested())
	}
	stopped := time.Now()
	leader.stop(t)
	gen(t, c, 4, 200, 20)
	testenv.WaitFor(t, "takeover", 10*time.Second, follower.ix.IsLeader)
	if d := time.Since(stopped); d > 10*time.Second {
		t.Fatalf("takeover took %s", d)
	}
	waitExact(t, st, c, 30*time.Second)
	if got := follower.ix.Ingested(); got != 200 {
		t.Fatalf("new leader stored %d attestations, want the 200 new ones", got)
	}
	follower.stop(t)
}

func TestBatchesCutBetweenTransactions(t *testing.T) {
	ix := &Indexer{cfg: Config{Checkpoint: "c", ChunkRecords: 5}, m: newMetrics(prometheus.NewRegistry()), size: batchsize.New(5)}
	mk := func(slot uint64, n int) *txRecords {
		return &txRecords{entry: sigEntry{sig: solana.Signature{byte(slot)}, slot: slot}, atts: make([]store.AttestationRecord, n)}
	}
	bs := ix.batches([]*txRecords{mk(1, 3), mk(2, 2), mk(3, 4), {entry: sigEntry{slot: 4}, skipped: "failed"}, mk(5, 9)})
	var shape []string
	for _, b := range bs {
		if b.batch.Checkpoint != nil {
			t.Fatal("a batch carries a checkpoint: only the sync sets it")
		}
		shape = append(shape, fmt.Sprintf("%d/%d@%d", b.txs, len(b.batch.Attestations), b.last.slot))
	}
	if got := strings.Join(shape, " "); got != "2/5@2 2/4@4 1/9@5" {
		t.Fatalf("batches %s", got)
	}
	// Transactions without rows: pending and settled ones are told apart.
	bs = ix.batches([]*txRecords{
		{entry: sigEntry{sig: solana.Signature{6}, slot: 6}, pending: true},
		{entry: sigEntry{sig: solana.Signature{7}, slot: 7}, skipped: "no_events"},
		{entry: sigEntry{sig: solana.Signature{8}, slot: 8}, skipped: "failed"}, mk(9, 1),
	})
	if len(bs) != 1 || bs[0].txs != 4 || len(bs[0].pending) != 1 || bs[0].pending[0].entry.slot != 6 ||
		len(bs[0].settled) != 2 || bs[0].last.slot != 9 {
		t.Fatalf("batches %+v", bs)
	}
}

// TestTruncatedLogs: with the runtime's 10,000-byte log limit, batches of
// 100 lose most of their "Program data:" lines; the indexer rebuilds the
// events from the instructions and still stores exactly the ground truth.
func TestTruncatedLogs(t *testing.T) {
	c := startChain(t, devnet.Config{LogLimit: 10_000, Agents: 3, Attestations: 500, Batch: 100})
	gen(t, c, 3, 12, 4)
	cl := rpc.New(c.RPCURL())
	defer cl.Close()
	sig := c.Transactions()[5].Signature // a batch of 100
	var v uint64
	res, err := cl.GetTransaction(context.Background(), sig, &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64,
		Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &v})
	testenv.Must(t, err, "get tx")
	if logs := res.Meta.LogMessages; logs[len(logs)-1] != "Log truncated" {
		t.Fatalf("logs were not truncated: last line %q", logs[len(logs)-1])
	}
	st := newStore(t)
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 30*time.Second)
	r.stop(t)
}
