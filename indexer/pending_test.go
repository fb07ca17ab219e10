package indexer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLaggingNodeTransactionIsNotSkipped: getTransaction answers null for
// a listed transaction for a few seconds (a lagging node behind a load
// balancer). The index goes on past it (the next transaction is stored at
// once) while the checkpoint stays before it; the writer dies meanwhile,
// and the next one meets it again from the checkpoint and stores it once
// the node returns it: it is never given up as vanished.
func TestLaggingNodeTransactionIsNotSkipped(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 2, Attestations: 100, Batch: 50})
	st := newStore(t)
	reg := prometheus.NewRegistry()
	tweak := func(cfg *Config) { cfg.Registerer, cfg.PendingRetry = reg, 100*time.Millisecond }
	first := startIndexer(t, st, c, tweak)
	waitExact(t, st, c, 30*time.Second)

	testenv.Must(t, c.HideNextTransactions(1, devnet.Hide{For: 3 * time.Second}), "hide")
	hidden := gen(t, c, 2, 5, 5).Records[0]
	next := gen(t, c, 2, 5, 5).Records[0]
	testenv.WaitFor(t, "the transaction after the hidden one", 20*time.Second, func() bool { return txRows(t, st, next) == 5 })
	if n := txRows(t, st, hidden); n != 0 {
		t.Fatalf("hidden transaction has %d rows while hidden", n)
	}
	slotOf := map[solana.Signature]uint64{}
	for _, tx := range c.Transactions() {
		slotOf[tx.Signature] = tx.Slot
	}
	cp, _, err := st.Checkpoint(context.Background(), CheckpointName)
	testenv.Must(t, err, "checkpoint")
	if cp.Slot > slotOf[hidden] || cp.Signature == hidden.String() || cp.Signature == next.String() {
		t.Fatalf("checkpoint at slot %d (%s) moved past the pending transaction of slot %d", cp.Slot, cp.Signature, slotOf[hidden])
	}
	if v := metricValue(t, reg, "attestd_indexer_pending_transactions"); v != 1 {
		t.Fatalf("pending gauge %v, want 1", v)
	}
	// The writer stops while the transaction is pending; another takes over.
	first.stop(t)
	reg2 := prometheus.NewRegistry()
	second := startIndexer(t, st, c, func(cfg *Config) { tweak(cfg); cfg.Registerer = reg2 })
	waitExact(t, st, c, 30*time.Second)
	for _, r := range []*prometheus.Registry{reg, reg2} {
		if v := metricValue(t, r, "attestd_indexer_transactions_skipped_total", "reason", "vanished"); v != 0 {
			t.Fatalf("%v transactions given up as vanished", v)
		}
	}
	if v := metricValue(t, reg2, "attestd_indexer_pending_resolved_total", "outcome", "indexed"); v != 1 {
		t.Fatalf("pending resolved %v, want 1", v)
	}
	testenv.WaitFor(t, "the checkpoint past both", 10*time.Second, func() bool {
		cp, _, err := st.Checkpoint(context.Background(), CheckpointName)
		return err == nil && cp.Slot >= slotOf[next]
	})
	if v := metricValue(t, reg2, "attestd_indexer_pending_transactions"); v != 0 {
		t.Fatalf("pending gauge %v after resolution", v)
	}
	second.stop(t)
}

// TestGivenUpTransactionIsStillIndexed: the lagging node hides a
// transaction and its status for longer than the pending timeout, so the
// indexer gives it up as dropped by a fork; once the node returns it, the
// reconciliations find it missing and store it.
func TestGivenUpTransactionIsStillIndexed(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 2, Attestations: 100, Batch: 50})
	st := newStore(t)
	reg := prometheus.NewRegistry()
	r := startIndexer(t, st, c, func(cfg *Config) {
		cfg.Registerer, cfg.PendingRetry, cfg.PendingTimeout = reg, 50*time.Millisecond, 300*time.Millisecond
		cfg.ReconcileInterval = 200 * time.Millisecond
	})
	// Waits of testenv.Patience: the reconciliation that finds the given-up
	// transaction again took more than 30 s on a loaded machine (make test).
	waitExact(t, st, c, testenv.Patience)
	testenv.Must(t, c.HideNextTransactions(1, devnet.Hide{For: 2 * time.Second, Statuses: true}), "hide")
	hidden := gen(t, c, 2, 7, 7).Records[0]
	testenv.WaitFor(t, "the indexer to give the hidden transaction up", testenv.Patience, func() bool {
		return metricValue(t, reg, "attestd_indexer_pending_resolved_total", "outcome", "vanished") >= 1
	})
	waitExact(t, st, c, testenv.Patience)
	if n := txRows(t, st, hidden); n != 7 {
		t.Fatalf("hidden transaction: %d rows", n)
	}
	r.stop(t)
}

// TestStuckTransactionReleasesCheckpoint: the node keeps answering null
// for a transaction it knows (its status is there) past the pending
// timeout. The indexer keeps retrying but stops holding the checkpoint, so
// one transaction cannot freeze the index; it is stored once returned.
func TestStuckTransactionReleasesCheckpoint(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 2, Attestations: 100, Batch: 50})
	st := newStore(t)
	reg := prometheus.NewRegistry()
	r := startIndexer(t, st, c, func(cfg *Config) {
		cfg.Registerer, cfg.PendingRetry, cfg.PendingMaxBackoff, cfg.PendingTimeout = reg, 50*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	})
	waitExact(t, st, c, 30*time.Second)
	const hideFor = 8 * time.Second
	testenv.Must(t, c.HideNextTransactions(1, devnet.Hide{For: hideFor}), "hide")
	hidden := gen(t, c, 2, 5, 5).Records[0]
	next := gen(t, c, 2, 5, 5).Records[0]
	testenv.WaitFor(t, "the checkpoint to move past the stuck transaction", hideFor-time.Second, func() bool {
		if txRows(t, st, hidden) != 0 {
			t.Fatal("stored while hidden")
		}
		cp, _, err := st.Checkpoint(context.Background(), CheckpointName)
		return err == nil && cp.Signature == next.String()
	})
	waitExact(t, st, c, 30*time.Second)
	if v := metricValue(t, reg, "attestd_indexer_transactions_skipped_total", "reason", "vanished"); v != 0 {
		t.Fatalf("%v transactions given up as vanished", v)
	}
	r.stop(t)
}

// TestReconciliationRepairsAGap: the rows of a finalized transaction are
// lost from the store (as an older indexer that skipped it would have
// left it); the periodic reconciliation of the finalized window finds it
// missing and stores it again, exactly, and counts it in /metrics.
func TestReconciliationRepairsAGap(t *testing.T) {
	c := startChain(t, devnet.Config{Agents: 3, Attestations: 300, Batch: 30})
	st := newStore(t)
	reg := prometheus.NewRegistry()
	r := startIndexer(t, st, c, func(cfg *Config) {
		cfg.Registerer, cfg.ReconcileInterval, cfg.ReconcileWindow = reg, 300*time.Millisecond, 100_000
	})
	waitExact(t, st, c, 30*time.Second)
	testenv.WaitFor(t, "every row finalized", 30*time.Second, func() bool { return unfinalized(t, st) == 0 })
	ctx := context.Background()
	lost := c.Transactions()[5] // a record_attestations of 30 (after the 3 registrations)
	if lost.Events != 30 {
		t.Fatalf("transaction 5 has %d events", lost.Events)
	}
	// Remove its rows through the write path (counters kept right). The
	// write path removes only rows not yet final, and the indexer's
	// finality pass may mark them final again between the two statements:
	// then nothing is removed, and the pair is tried again.
	testenv.WaitForState(t, "the lost transaction's rows removed", testenv.Patience, func() (bool, string) {
		_, err := st.Pool().Exec(ctx, `UPDATE attestations SET finalized = false WHERE tx_signature = $1`, lost.Signature.String())
		testenv.Must(t, err, "unfinalize")
		n, err := st.RemoveTransactions(ctx, []string{lost.Signature.String()})
		if err != nil || (n != 0 && n != 30) {
			t.Fatalf("remove: %d %v", n, err)
		}
		return n == 30, fmt.Sprintf("removed %d", n)
	})
	waitExact(t, st, c, 30*time.Second)
	// Repaired once, by a pass over finalized slots: the window's, or the
	// log frontier's when the frontier had not passed the slot yet.
	repaired := func(name string) float64 {
		return metricValue(t, reg, name, "range", "finalized") + metricValue(t, reg, name, "range", "frontier")
	}
	if v := repaired("attestd_indexer_gap_transactions_repaired_total"); v != 1 {
		t.Fatalf("repaired transactions %v, want 1", v)
	}
	if v := repaired("attestd_indexer_gap_attestations_repaired_total"); v != 30 {
		t.Fatalf("repaired attestations %v, want 30", v)
	}
	if v := metricValue(t, reg, "attestd_indexer_reconciliations_total", "range", "finalized", "result", "error"); v != 0 {
		t.Fatalf("%v failed reconciliations", v)
	}
	r.stop(t)
}

// TestForkAddsTransactionBelowCheckpoint: a fork at confirmed level adds a
// transaction to a slot below the one the checkpoint names; the sync lists
// only down to the checkpoint, so the reconciliation of the unfinalized
// slots must pick it up (confirmed), and finality then promotes it.
func TestForkAddsTransactionBelowCheckpoint(t *testing.T) {
	c := startChain(t, devnet.Config{SlotInterval: -1, FinalityDepth: 20, Agents: 2, Attestations: 40, Batch: 20})
	st := newStore(t)
	reg := prometheus.NewRegistry()
	r := startIndexer(t, st, c, func(cfg *Config) { cfg.Registerer = reg })
	waitExact(t, st, c, 30*time.Second)
	c.AdvanceSlots(5)
	below := c.Slot()
	gen(t, c, 2, 10, 10)
	c.AdvanceSlots(3)
	gen(t, c, 2, 10, 10)
	waitExact(t, st, c, 20*time.Second)
	cp, ok, err := st.Checkpoint(context.Background(), CheckpointName)
	if err != nil || !ok || cp.Slot != c.Slot() {
		t.Fatalf("checkpoint %+v %v %v, want slot %d", cp, ok, err, c.Slot())
	}
	sig, err := c.InsertTransaction(context.Background(), 1, 4, below)
	testenv.Must(t, err, "insert below the checkpoint")
	waitExact(t, st, c, 20*time.Second)
	if n := txRows(t, st, sig); n != 4 {
		t.Fatalf("inserted transaction: %d rows", n)
	}
	if v := metricValue(t, reg, "attestd_indexer_gap_transactions_repaired_total", "range", "confirmed"); v != 1 {
		t.Fatalf("repaired (confirmed range) %v, want 1", v)
	}
	c.AdvanceSlots(30)
	testenv.WaitFor(t, "every row finalized", 20*time.Second, func() bool { return unfinalized(t, st) == 0 })
	r.stop(t)
}
