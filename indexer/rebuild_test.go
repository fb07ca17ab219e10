package indexer

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// loggedStore is a store with an indexer and a log appender on it.
type loggedStore struct {
	st *store.Store
	ix *running
}

// startLogged indexes c into a new, empty database with the log's
// appender running beside the indexer, as `attestd index` does.
func startLogged(t *testing.T, c *devnet.Chain, key translog.Key) *loggedStore {
	t.Helper()
	st := newStore(t)
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Logger: quietLogger(), LockRetry: 50 * time.Millisecond,
		Config: translog.Config{Key: key, Batch: 7, CheckpointInterval: 30 * time.Millisecond, Poll: 10 * time.Millisecond}})
	testenv.Must(t, err, "appender")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &loggedStore{st: st, ix: startIndexer(t, st, c, nil)}
}

func (l *loggedStore) count(t *testing.T, sql string) int64 {
	t.Helper()
	var n int64
	testenv.Must(t, l.st.Pool().QueryRow(context.Background(), sql).Scan(&n), "count: %s", sql)
	return n
}

// waitLogged waits until every attestation of c is stored, final and in
// the log.
func (l *loggedStore) waitLogged(t *testing.T, c *devnet.Chain) {
	t.Helper()
	waitExact(t, l.st, c, testenv.Patience)
	testenv.WaitForState(t, "every attestation final and logged", testenv.Patience, func() (bool, string) {
		fin := l.count(t, `SELECT count(*) FROM attestations WHERE finalized`)
		all := l.count(t, `SELECT count(*) FROM attestations`)
		leaves := l.count(t, `SELECT count(*) FROM log_leaves`)
		return fin == all && leaves == all && l.count(t, `SELECT count(*) FROM log_queue`) == 0,
			fmt.Sprintf("%d attestations, %d final, %d leaves", all, fin, leaves)
	})
}

// TestLogRebuiltFromTheChainIsTheSame: the log is a function of the
// chain. One database indexes a chain whose transactions reach it out of
// order (one is hidden from getTransaction for a while, as a lagging RPC
// node does, while later slots finalize); a second, empty database
// indexes the same chain afterwards, all at once. Both logs hold the same
// leaf at every index, and the first log's every signed size has the same
// root in the second.
func TestLogRebuiltFromTheChainIsTheSame(t *testing.T) {
	c := startChain(t, devnet.Config{SlotInterval: -1, FinalityDepth: 3, Agents: 2, Attestations: 20, Batch: 10})
	skey, _, err := note.GenerateKey(rand.Reader, "rebuild.test/log")
	testenv.Must(t, err, "key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	first := startLogged(t, c, key)
	waitExact(t, first.st, c, testenv.Patience)
	gen(t, c, 2, 20, 5)
	c.AdvanceSlots(1)
	testenv.Must(t, c.HideNextTransactions(1, devnet.Hide{For: 2 * time.Second}), "hide")
	gen(t, c, 1, 5, 5) // its registration is hidden: the attestations wait for it
	c.AdvanceSlots(1)
	gen(t, c, 2, 20, 5)
	c.AdvanceSlots(1)
	gen(t, c, 2, 10, 10)
	c.AdvanceSlots(10)
	first.waitLogged(t, c)
	// Let the first log sign its newest size.
	testenv.WaitForState(t, "the first log signed its full size", testenv.Patience, func() (bool, string) {
		cps, err := first.st.LogCheckpoints(context.Background(), key.Name, 0, 1000)
		testenv.Must(t, err, "checkpoints")
		size := first.count(t, `SELECT size FROM log_size`)
		return len(cps) > 0 && cps[len(cps)-1].Size == size, fmt.Sprintf("%d checkpoints, size %d", len(cps), size)
	})

	second := startLogged(t, c, key)
	second.waitLogged(t, c)
	ctx := context.Background()
	n := first.count(t, `SELECT size FROM log_size`)
	if m := second.count(t, `SELECT size FROM log_size`); m != n {
		t.Fatalf("the rebuilt log has %d leaves, the first %d", m, n)
	}
	a, err := first.st.LogLeaves(ctx, 0, int(n))
	testenv.Must(t, err, "first leaves")
	b, err := second.st.LogLeaves(ctx, 0, int(n))
	testenv.Must(t, err, "second leaves")
	for i := range a {
		if string(a[i]) != string(b[i]) {
			t.Fatalf("leaf %d differs:\nfirst  %s\nsecond %s", i, a[i], b[i])
		}
	}
	cps, err := first.st.LogCheckpoints(ctx, key.Name, 0, 1000)
	testenv.Must(t, err, "checkpoints")
	for _, cp := range cps {
		want, err := tlog.TreeHash(cp.Size, first.st.LogHashReader(ctx))
		testenv.Must(t, err, "first root at %d", cp.Size)
		got, err := tlog.TreeHash(cp.Size, second.st.LogHashReader(ctx))
		testenv.Must(t, err, "second root at %d", cp.Size)
		if got != want {
			t.Fatalf("at the signed size %d the rebuilt root is %s, the signed one %s", cp.Size, got, want)
		}
	}
	t.Logf("%d leaves and the roots of %d signed sizes rebuilt the same", n, len(cps))
}
