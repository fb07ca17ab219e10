package translog_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/tlog"
)

// The test binary runs as an appender process when childDBEnv is set.
const (
	childDBEnv  = "TRANSLOG_TEST_CHILD_DB"
	childKeyEnv = "TRANSLOG_TEST_CHILD_KEY"
)

// withAppName sets a connection URL's application_name, so tests find
// that process's backends in pg_stat_activity.
func withAppName(t testing.TB, db, name string) string {
	u, err := url.Parse(db)
	testenv.Must(t, err, "parse database url")
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// runChildAppender runs an appender until killed.
func runChildAppender(db, skey string) int {
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{MaxConns: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open store:", err)
		return 2
	}
	key, err := translog.ParseKey(skey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: key:", err)
		return 2
	}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Logger: apptest.Logger(), LockRetry: 50 * time.Millisecond,
		Config: translog.Config{Key: key, Batch: 3000, CheckpointInterval: 20 * time.Millisecond, Poll: 10 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	_ = a.Run(ctx)
	return 0
}

// writing counts the backends of application name that are inside a
// transaction which has written something (it holds a transaction id):
// an append between its first write and its commit.
func writing(t testing.TB, st *store.Store, name string) int64 {
	var n int64
	testenv.Must(t, st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND backend_xid IS NOT NULL`, name).Scan(&n), "pg_stat_activity")
	return n
}

// TestAppenderKilledMidBatch kills (SIGKILL) appender processes in the
// middle of an append, between its first write and its commit, three
// times, each after it committed one; the next appenders finish the job: no gap, no duplicate, one
// leaf per finalized attestation, every checkpoint signed on the way a
// root of the final tree's prefix.
func TestAppenderKilledMidBatch(t *testing.T) {
	le := newLogEnv(t, 3)
	le.bulk(t, 30000, attestation.Finalized)
	skey := exportKey(t, le)
	db := withAppName(t, le.env.DatabaseURL, "logkill")
	kills := 0
	for kills < 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childDBEnv+"="+db, childKeyEnv+"="+skey)
		cmd.Stderr = os.Stderr
		testenv.Must(t, cmd.Start(), "start appender process")
		before := le.count(t, `SELECT size FROM log_size`)
		// Let it commit an append and sign it, then catch it inside the next.
		testenv.WaitFor(t, "the appender process commits an append and signs it", 60*time.Second, func() bool {
			return le.count(t, `SELECT COALESCE(max(size), 0) FROM log_checkpoints`) > before
		})
		testenv.WaitFor(t, "the appender process writes an append", 60*time.Second, func() bool { return writing(t, le.st, "logkill") > 0 })
		testenv.Must(t, cmd.Process.Kill(), "kill")
		_ = cmd.Wait()
		kills++
		// Its backends roll back once they see the connection gone.
		testenv.WaitFor(t, "the killed process's backends end", 30*time.Second, func() bool {
			var n int64
			testenv.Must(t, le.st.Pool().QueryRow(context.Background(),
				`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'logkill'`).Scan(&n), "count")
			return n == 0
		})
		t.Logf("kill %d: log size %d", kills, le.count(t, `SELECT size FROM log_size`))
	}
	if le.count(t, `SELECT count(*) FROM log_queue`) == 0 {
		t.Fatal("the processes appended everything before the kills: nothing was cut mid-batch")
	}
	// More finalized attestations arrive; another appender finishes.
	le.bulk(t, 1000, attestation.Finalized)
	le.appendAll(t)
	checkInvariants(t, le)
	checkCheckpoints(t, le)
}

// TestLeaderChange: two appenders campaign; the leader's connections are
// cut (pg_terminate_backend) in the middle of an append while new
// attestations keep being finalized; the other takes over. Then the new
// leader stops cleanly and the first takes over again. No gap, no
// duplicate.
func TestLeaderChange(t *testing.T) {
	le := newLogEnv(t, 3)
	le.bulk(t, 12000, attestation.Finalized)
	type member struct {
		name   string
		st     *store.Store
		a      *translog.Appender
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) *member {
		st, err := store.Open(context.Background(), withAppName(t, le.env.DatabaseURL, name), store.Options{MaxConns: 4})
		testenv.Must(t, err, "open store")
		t.Cleanup(st.Close)
		a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Logger: apptest.Logger(), LockRetry: 20 * time.Millisecond,
			Config: translog.Config{Key: le.key, Batch: 1500, CheckpointInterval: 20 * time.Millisecond, Poll: 5 * time.Millisecond}})
		testenv.Must(t, err, "appender")
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{name: name, st: st, a: a, cancel: cancel, done: make(chan struct{})}
		go func() { _ = a.Run(ctx); close(m.done) }()
		t.Cleanup(func() { cancel(); <-m.done })
		return m
	}
	a, b := start("appA"), start("appB")
	testenv.WaitFor(t, "a leader", testenv.Patience, func() bool { return a.a.IsLeader() || b.a.IsLeader() })
	leader, other := a, b
	if b.a.IsLeader() {
		leader, other = b, a
	}
	// Finality goes on meanwhile.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			le.bulk(t, 500, attestation.Finalized)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	testenv.WaitFor(t, "the leader writes an append", 30*time.Second, func() bool { return writing(t, le.st, leader.name) > 0 })
	_, err := le.st.Pool().Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, leader.name)
	testenv.Must(t, err, "terminate the leader's backends")
	testenv.WaitFor(t, "the other appender leads", 30*time.Second, other.a.IsLeader)
	wg.Wait()
	testenv.WaitFor(t, "the log catches up", 60*time.Second, func() bool {
		return le.count(t, `SELECT count(*) FROM log_queue`) == 0
	})
	// A clean change back.
	other.cancel()
	<-other.done
	le.bulk(t, 300, attestation.Finalized)
	testenv.WaitFor(t, "the first appender leads again", 30*time.Second, leader.a.IsLeader)
	testenv.WaitFor(t, "the log catches up again", 60*time.Second, func() bool {
		return le.count(t, `SELECT count(*) FROM log_queue`) == 0
	})
	checkInvariants(t, le)
	checkCheckpoints(t, le)
}

// TestConcurrentAppendsSerialise: appends made at once, without the
// appender lock, serialise on the size row: no gap, no duplicate.
func TestConcurrentAppendsSerialise(t *testing.T) {
	le := newLogEnv(t, 2)
	le.bulk(t, 6000, attestation.Finalized)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := le.st.LogAppend(context.Background(), 400)
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				if res.Leaves+res.Dropped == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, le)
}

// exportKey returns the private key text of le's key, as the operator
// sets ATTESTD_LOG_KEY.
func exportKey(t testing.TB, le *logEnv) string {
	if le.skey == "" {
		t.Fatal("no private key text kept")
	}
	return le.skey
}

// checkCheckpoints: every checkpoint stored is signed by the key and its
// root is the root of that prefix of the final tree.
func checkCheckpoints(t testing.TB, le *logEnv) {
	t.Helper()
	ctx := context.Background()
	cps, err := le.st.LogCheckpoints(ctx, le.key.Name, -1, 100000)
	testenv.Must(t, err, "checkpoints")
	if len(cps) < 2 {
		t.Fatalf("%d checkpoints", len(cps))
	}
	for _, c := range cps {
		cp, err := logformat.OpenCheckpoint([]byte(c.Note), le.key.Verifier)
		testenv.Must(t, err, "checkpoint %d", c.Size)
		root, err := tlog.TreeHash(cp.Size, le.st.LogHashReader(ctx))
		testenv.Must(t, err, "tree hash %d", cp.Size)
		if root != cp.Root || cp.Size != c.Size {
			t.Fatalf("checkpoint of size %d: root %s, the tree's prefix %s", c.Size, cp.Root, root)
		}
	}
}
