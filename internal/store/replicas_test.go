package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// openReplicated opens a store on a primary with one streaming replica,
// migrated, and waits until the replica is in use.
func openReplicated(t *testing.T, opt ReplicaOptions) (*Store, testenv.Replicated) {
	t.Helper()
	rp := testenv.OwnReplicated(t)
	opt.URLs = []string{rp.ReplicaURL}
	st, err := Open(context.Background(), rp.PrimaryURL, Options{MaxConns: 8, Replicas: opt})
	testenv.Must(t, err, "open")
	t.Cleanup(st.Close)
	_, err = st.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	testenv.WaitFor(t, "the replica in use", 30*time.Second, func() bool { return replicaStatus(st) == "ok" })
	return st, rp
}

func replicaStatus(st *Store) string { return st.Replicas()[0].Status }

// insert applies one attestation and returns the WAL position after it,
// as the write path announces it.
func insert(t *testing.T, st *Store, tx string) uint64 {
	t.Helper()
	ctx := context.Background()
	_, err := st.Apply(ctx, &Batch{Attestations: []AttestationRecord{
		rec("agentA", tx, 0, attestation.ToolCall, time.Now().UTC().Truncate(time.Second), attestation.Finalized)}})
	testenv.Must(t, err, "apply")
	pos := st.walPosition(ctx)
	if pos == 0 {
		t.Fatal("no WAL position")
	}
	return pos
}

func replicaReads(st *Store) float64 { return testutil.ToFloat64(st.replicas.list[0].reads) }

// TestReplicaReadsWaitForTheirPosition: a read that must reflect a commit
// reads the replica only once it has replayed that commit; while replay
// is paused it waits the bounded time and reads the primary; reads
// without a position never use the replica.
func TestReplicaReadsWaitForTheirPosition(t *testing.T) {
	t.Parallel()
	st, rp := openReplicated(t, ReplicaOptions{MaxLag: time.Hour, Wait: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	pos := insert(t, st, "tx1")
	testenv.WaitFor(t, "replay of tx1", 30*time.Second, func() bool { return st.Replicas()[0].ReplayLSN >= pos })
	before := replicaReads(st)
	a, err := st.GetAttestation(AtLeast(ctx, pos), "pda-tx1-0")
	testenv.Must(t, err, "read at a replayed position")
	if replicaReads(st) != before+1 || a.PDA != "pda-tx1-0" {
		t.Fatalf("a read at a replayed position did not use the replica")
	}
	if _, err := st.GetAttestation(ctx, "pda-tx1-0"); err != nil || replicaReads(st) != before+1 {
		t.Fatalf("a read without a position used the replica (err %v)", err)
	}

	rp.PauseReplay(t)
	pos2 := insert(t, st, "tx2")
	start := time.Now()
	a, err = st.GetAttestation(AtLeast(ctx, pos2), "pda-tx2-0")
	if err != nil || a.PDA != "pda-tx2-0" {
		t.Fatalf("read at a position the paused replica lacks: %+v %v (the replica's stale answer?)", a, err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("answered after %s: want the primary after the full wait", waited)
	}
	if replicaReads(st) != before+1 {
		t.Fatal("read the paused replica")
	}
	// The position that timed out goes to the primary at once.
	start = time.Now()
	_, err = st.GetAttestation(AtLeast(ctx, pos2), "pda-tx2-0")
	testenv.Must(t, err, "read again")
	if time.Since(start) >= 300*time.Millisecond {
		t.Fatal("waited again for a position that already timed out")
	}
	// Resumed, the replica catches up and serves the position again; a
	// read started before it catches up waits for it rather than failing.
	done := make(chan error, 1)
	pos3 := insert(t, st, "tx3")
	go func() {
		_, err := st.GetAttestation(AtLeast(ctx, pos3), "pda-tx3-0")
		done <- err
	}()
	rp.ResumeReplay(t)
	testenv.Must(t, <-done, "read while the replica resumes")
	testenv.WaitFor(t, "replay of tx3", 30*time.Second, func() bool { return st.Replicas()[0].ReplayLSN >= pos3 })
	n := replicaReads(st)
	_, err = st.GetAttestation(AtLeast(ctx, pos3), "pda-tx3-0")
	testenv.Must(t, err, "read after resume")
	if replicaReads(st) != n+1 {
		t.Fatal("the caught-up replica is not read")
	}
}

// TestLaggingReplicaIsSkipped: a replica further behind than the bound is
// reported lagging (with its lag) and not read; it is used again once it
// catches up.
func TestLaggingReplicaIsSkipped(t *testing.T) {
	t.Parallel()
	st, rp := openReplicated(t, ReplicaOptions{MaxLag: 300 * time.Millisecond, Wait: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	rp.PauseReplay(t)
	replayed := st.Replicas()[0].ReplayLSN
	insert(t, st, "lag1")
	testenv.WaitFor(t, "the replica reported lagging", 30*time.Second, func() bool { return replicaStatus(st) == "lagging" })
	if lag := st.Replicas()[0].LagSeconds; lag < 0.3 {
		t.Fatalf("lagging with lag %v s", lag)
	}
	before := replicaReads(st)
	// Even a position it has replayed is not read from it now.
	if _, err := st.Stats(AtLeast(ctx, replayed), time.Now()); err != nil || replicaReads(st) != before {
		t.Fatalf("read a lagging replica (err %v)", err)
	}
	rp.ResumeReplay(t)
	testenv.WaitFor(t, "the replica back in use", 30*time.Second, func() bool { return replicaStatus(st) == "ok" })
	if lag := st.Replicas()[0].LagSeconds; lag > 0.3 {
		t.Fatalf("ok with lag %v s", lag)
	}
}

// TestReadsContinueWhenTheReplicaDies: reads in use of a replica that is
// killed are answered by the primary, at once and afterwards; the replica
// is reported down.
func TestReadsContinueWhenTheReplicaDies(t *testing.T) {
	t.Parallel()
	st, rp := openReplicated(t, ReplicaOptions{MaxLag: time.Hour, Wait: 100 * time.Millisecond, PollInterval: time.Hour})
	ctx := context.Background()
	var pos uint64
	for i := 0; i < 5; i++ {
		pos = insert(t, st, fmt.Sprintf("die%d", i))
	}
	// The poller runs once an hour here: wake it until it has seen the replay.
	testenv.WaitFor(t, "replay", 30*time.Second, func() bool { st.replicas.wake(); return st.Replicas()[0].ReplayLSN >= pos })
	before := replicaReads(st)
	if _, err := st.GetAgentStats(AtLeast(ctx, pos), "agentA", time.Now()); err != ErrNotFound || replicaReads(st) != before+1 {
		t.Fatalf("stats of an unknown agent on the replica: %v", err)
	}
	rp.Replica.Kill()
	// The poller has not noticed (it sleeps an hour): the read meets the
	// dead replica, and is answered by the primary.
	page, err := st.ListAttestations(AtLeast(ctx, pos), Filter{AgentPDA: "agentA", Limit: 10})
	testenv.Must(t, err, "list right after the replica died")
	if page.Total != 5 || len(page.Items) != 5 {
		t.Fatalf("list after the replica died: total %d, %d items", page.Total, len(page.Items))
	}
	if s := replicaStatus(st); s != "down" {
		t.Fatalf("replica %s after a failed read, want down", s)
	}
	for i := 0; i < 20; i++ {
		if _, err := st.GetAttestation(AtLeast(ctx, pos), "pda-die3-0"); err != nil {
			t.Fatalf("read %d after the replica died: %v", i, err)
		}
	}
	if got := testutil.ToFloat64(st.replicas.toPrimary.WithLabelValues("none_usable")); got < 20 {
		t.Fatalf("%v reads counted as none usable, want 20", got)
	}
}

// TestAServerNotInRecoveryIsNeverRead: a URL in DATABASE_READ_URLS that
// names a server replaying no WAL (a promoted replica, or a primary by
// mistake) is reported and never read.
func TestAServerNotInRecoveryIsNeverRead(t *testing.T) {
	t.Parallel()
	url := testenv.Database(t)
	st, err := Open(context.Background(), url, Options{MaxConns: 4, Replicas: ReplicaOptions{URLs: []string{url}, PollInterval: 10 * time.Millisecond}})
	testenv.Must(t, err, "open")
	t.Cleanup(st.Close)
	_, err = st.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	testenv.WaitFor(t, "the server reported", 30*time.Second, func() bool { return replicaStatus(st) == "not_replica" })
	for i := 0; i < 10; i++ {
		if _, err := st.Stats(AtLeast(context.Background(), 0), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if replicaReads(st) != 0 {
		t.Fatal("read a server that is not a replica")
	}
}

func TestReplicasFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := ReplicasFromEnv(env(nil))
	if err != nil || len(o.URLs) != 0 || o.MaxLag != 2*time.Second || o.Wait != 200*time.Millisecond || o.PollInterval != 100*time.Millisecond {
		t.Fatalf("defaults %+v %v", o, err)
	}
	o, err = ReplicasFromEnv(env(map[string]string{"DATABASE_READ_URLS": " postgres://a@h1/db , ,postgres://b@h2:5433/db ",
		"ATTESTD_REPLICA_MAX_LAG": "500ms", "ATTESTD_REPLICA_WAIT": "0s"}))
	if err != nil || len(o.URLs) != 2 || o.URLs[1] != "postgres://b@h2:5433/db" || o.MaxLag != 500*time.Millisecond || o.Wait != 0 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, m := range []map[string]string{
		{"DATABASE_READ_URLS": "postgres://h/db?sslmode=bogus"},
		{"ATTESTD_REPLICA_MAX_LAG": "0s"},
		{"ATTESTD_REPLICA_WAIT": "forever"},
		{"ATTESTD_REPLICA_POLL_INTERVAL": "1ms"},
	} {
		if _, err := ReplicasFromEnv(env(m)); err == nil {
			t.Errorf("%v: want an error", m)
		}
	}
	// A bad URL is named by its position, never echoed with its password.
	_, err = ReplicasFromEnv(env(map[string]string{"DATABASE_READ_URLS": "postgres://u@h/db,postgres://u:s3cret@h:99999/db"}))
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "replica 2") {
		t.Fatalf("error %v: want replica 2 named, no password", err)
	}
}

func TestSessionDefaultsYieldToTheURL(t *testing.T) {
	for _, tc := range []struct {
		url, plan, pageCost string
	}{
		{"postgres://u@h/db", "force_generic_plan", "1.1"},
		{"postgres://u@h/db?plan_cache_mode=auto", "auto", "1.1"},
		{"postgres://u@h/db?random_page_cost=4&plan_cache_mode=force_custom_plan", "force_custom_plan", "4"},
	} {
		cfg, err := pgx.ParseConfig(tc.url)
		testenv.Must(t, err, "parse %s", tc.url)
		tune(cfg)
		p := cfg.RuntimeParams
		if p["plan_cache_mode"] != tc.plan || p["random_page_cost"] != tc.pageCost || p["application_name"] != "attestd" {
			t.Errorf("%s: session settings %v", tc.url, p)
		}
	}
}
