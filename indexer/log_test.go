package indexer

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
)

// TestForkDroppedNeverLogged runs the transparency log's appender beside
// the indexer on a chain where a fork drops a confirmed transaction: the
// dropped attestation never gets a leaf, every finalized one gets exactly
// one (leaf count == finalized count), none before it is finalized.
func TestForkDroppedNeverLogged(t *testing.T) {
	c := startChain(t, devnet.Config{SlotInterval: -1, FinalityDepth: 5, Agents: 2, Attestations: 40, Batch: 20})
	st := newStore(t)
	skey, _, err := note.GenerateKey(rand.Reader, "fork.test/log")
	testenv.Must(t, err, "key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Logger: quietLogger(), LockRetry: 50 * time.Millisecond,
		Config: translog.Config{Key: key, Batch: 100, CheckpointInterval: 50 * time.Millisecond, Poll: 20 * time.Millisecond}})
	testenv.Must(t, err, "appender")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 30*time.Second)
	g := gen(t, c, 2, 30, 10)
	c.AdvanceSlots(1)
	gen(t, c, 2, 10, 10)
	waitExact(t, st, c, 20*time.Second)
	dropped := g.Records[1]
	count := func(sql string, args ...any) int64 {
		var n int64
		testenv.Must(t, st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n), "count: %s", sql)
		return n
	}
	// While confirmed, the soon-dropped transaction's attestations have no leaf.
	if n := count(`SELECT count(*) FROM log_leaves l JOIN attestations a USING (pda) WHERE NOT a.finalized`); n != 0 {
		t.Fatalf("%d confirmed attestations have a leaf", n)
	}
	dropPDAs := count(`SELECT count(*) FROM attestations WHERE tx_signature = $1`, dropped.String())
	if dropPDAs == 0 {
		t.Fatal("the transaction to drop is not indexed")
	}
	testenv.Must(t, c.DropTransaction(dropped), "drop")
	c.AdvanceSlots(10)
	waitExact(t, st, c, 20*time.Second)
	testenv.WaitFor(t, "every row finalized", testenv.Patience, func() bool { return unfinalized(t, st) == 0 })
	testenv.WaitFor(t, "the log holds every finalized attestation", testenv.Patience, func() bool {
		return count(`SELECT count(*) FROM log_queue`) == 0 &&
			count(`SELECT count(*) FROM log_leaves`) == count(`SELECT count(*) FROM attestations WHERE finalized`)
	})
	if n := count(`SELECT count(*) FROM attestations WHERE tx_signature = $1`, dropped.String()); n != 0 {
		t.Fatalf("%d rows of the dropped transaction remain", n)
	}
	if n := count(`SELECT count(*) FROM log_leaves l WHERE NOT EXISTS (SELECT 1 FROM attestations a WHERE a.pda = l.pda AND a.finalized)`); n != 0 {
		t.Fatalf("%d leaves are not of a finalized attestation (the dropped transaction's?)", n)
	}
	leaves := count(`SELECT count(*) FROM log_leaves`)
	if leaves < 40 || count(`SELECT max(idx) + 1 FROM log_leaves`) != leaves || count(`SELECT size FROM log_size`) != leaves {
		t.Fatalf("%d leaves: a gap or a wrong size", leaves)
	}
	r.stop(t)
}
