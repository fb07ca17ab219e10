package indexer

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/backup"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// openEmpty opens a store on a new database without migrating it (what a
// restore goes into), and returns its URL too.
func openEmpty(t *testing.T) (*store.Store, string) {
	t.Helper()
	url := testenv.Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := store.Open(ctx, url, store.Options{})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	return st, url
}

// startLoggedOn runs an indexer of c and a log appender on st, as
// `attestd index` does.
func startLoggedOn(t *testing.T, st *store.Store, c *devnet.Chain, cfg translog.Config) *loggedStore {
	t.Helper()
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Logger: quietLogger(), LockRetry: 50 * time.Millisecond, Config: cfg})
	testenv.Must(t, err, "appender")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &loggedStore{st: st, ix: startIndexer(t, st, c, nil)}
}

// sameLog fails unless b holds a's first n leaves and, at every size a
// signed, the same root.
func sameLog(t *testing.T, a, b *loggedStore, origin string, n int64) int {
	t.Helper()
	ctx := context.Background()
	la, err := a.st.LogLeaves(ctx, 0, int(n))
	testenv.Must(t, err, "original leaves")
	lb, err := b.st.LogLeaves(ctx, 0, int(n))
	testenv.Must(t, err, "regrown leaves")
	if len(la) != int(n) || len(lb) != int(n) {
		t.Fatalf("%d and %d leaves read, want %d", len(la), len(lb), n)
	}
	for i := range la {
		if string(la[i]) != string(lb[i]) {
			t.Fatalf("leaf %d differs:\noriginal %s\nregrown  %s", i, la[i], lb[i])
		}
	}
	cps, err := a.st.LogCheckpoints(ctx, origin, 0, 10000)
	testenv.Must(t, err, "checkpoints")
	for _, cp := range cps {
		if cp.Size > n {
			continue
		}
		got, err := tlog.TreeHash(cp.Size, b.st.LogHashReader(ctx))
		testenv.Must(t, err, "regrown root at %d", cp.Size)
		if got != cp.Root {
			t.Fatalf("at the signed size %d the regrown root is %s, the signed one %s", cp.Size, got, cp.Root)
		}
	}
	return len(cps)
}

// TestLogRegrownFromABackupIsTheSame is the operator's experiment
// (docs/operations.md, Restore): with an indexer following a live chain,
// a pg_dump (attestd backup) is taken; the log grows on; the dump is
// restored into a new database (attestd restore) and an indexer and
// appender are started on it. Once the regrown log reaches the original's
// size, every leaf and every signed root below it is the original's.
func TestLogRegrownFromABackupIsTheSame(t *testing.T) {
	if _, err := backup.Tool("pg_dump"); err != nil {
		t.Fatal(err) // the PostgreSQL the suite runs on brings its client tools
	}
	c := startChain(t, devnet.Config{Agents: 3, Attestations: 30, Batch: 10})
	skey, _, err := note.GenerateKey(rand.Reader, "restore.test/log")
	testenv.Must(t, err, "key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	cfg := translog.Config{Key: key, Batch: 7, CheckpointInterval: 30 * time.Millisecond, Poll: 10 * time.Millisecond}
	origSt, origURL := openEmpty(t)
	_, err = origSt.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	orig := startLoggedOn(t, origSt, c, cfg)
	orig.waitLogged(t, c)

	// The dump is taken while the chain moves on and the indexer writes.
	gen(t, c, 2, 20, 5)
	file := filepath.Join(t.TempDir(), "attestd.dump")
	ctx := testenv.Context(t, testenv.Patience)
	b, err := backup.Take(ctx, orig.st, origURL, file)
	testenv.Must(t, err, "backup")
	gen(t, c, 2, 40, 10)
	gen(t, c, 1, 30, 15)
	orig.waitLogged(t, c)
	n := orig.count(t, `SELECT size FROM log_size`)
	if b.LogSize >= n {
		t.Fatalf("the log did not grow after the backup (size %d then, %d now)", b.LogSize, n)
	}
	if nb, ok, err := orig.st.NewestBackup(ctx); err != nil || !ok || nb.File != file || nb.Bytes != b.Bytes {
		t.Fatalf("the backup is not recorded: %+v %v %v", nb, ok, err)
	}
	testenv.WaitForState(t, "the original log signed its full size", testenv.Patience, func() (bool, string) {
		cp, ok, err := orig.st.LatestLogCheckpoint(context.Background(), key.Name)
		testenv.Must(t, err, "checkpoint")
		return ok && cp.Size == n, fmt.Sprintf("newest checkpoint %d of %d", cp.Size, n)
	})

	restSt, restURL := openEmpty(t)
	if _, err := backup.Restore(ctx, restSt, restURL, file); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if _, err := backup.Restore(ctx, restSt, restURL, file); err == nil {
		t.Fatal("a second restore into the same database was not refused")
	}
	rest := &loggedStore{st: restSt}
	if got := rest.count(t, `SELECT size FROM log_size`); got != b.LogSize {
		t.Fatalf("the restored log has %d leaves, the backup recorded %d", got, b.LogSize)
	}
	hold, err := restSt.ReadLogHold(ctx)
	testenv.Must(t, err, "hold")
	if hold.HeldSince.IsZero() {
		t.Fatal("the restored log is not held")
	}
	rest = startLoggedOn(t, restSt, c, cfg)
	rest.waitLogged(t, c)
	if m := rest.count(t, `SELECT size FROM log_size`); m != n {
		t.Fatalf("the regrown log has %d leaves, the original %d", m, n)
	}
	signed := sameLog(t, orig, rest, key.Name, n)
	hold, err = restSt.ReadLogHold(ctx)
	testenv.Must(t, err, "hold")
	if !hold.HeldSince.IsZero() {
		t.Fatal("the appender did not release the restore's hold")
	}
	t.Logf("backup at log size %d (slot %d, %d bytes); regrown to %d leaves, the same, and the roots of %d signed sizes",
		b.LogSize, b.ChainSlot, b.Bytes, n, signed)
}
