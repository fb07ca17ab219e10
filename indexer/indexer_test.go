package indexer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func quietLogger() *slog.Logger {
	if os.Getenv("ATTESTD_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := store.Open(ctx, testenv.Database(t), store.Options{})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	return st
}

func startChain(t *testing.T, cfg devnet.Config) *devnet.Chain {
	t.Helper()
	if cfg.SlotInterval == 0 {
		cfg.SlotInterval = 20 * time.Millisecond
	}
	if cfg.FinalityDepth == 0 {
		cfg.FinalityDepth = 8
	}
	cfg.Logger = quietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, err := devnet.Start(ctx, cfg)
	testenv.Must(t, err, "start devnet")
	t.Cleanup(c.Close)
	return c
}

// running is an indexer started by a test.
type running struct {
	ix     *Indexer
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("indexer returned %v", r.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("indexer did not stop")
	}
}

func startIndexer(t *testing.T, st *store.Store, c *devnet.Chain, tweak func(*Config)) *running {
	t.Helper()
	cfg := Config{
		RPCURL: c.RPCURL(), WSURL: c.WSURL(), ProgramID: c.ProgramID(),
		PollInterval: time.Second, FallbackPoll: 150 * time.Millisecond, FinalityInterval: 150 * time.Millisecond,
		LockRetry: 200 * time.Millisecond, Logger: quietLogger(),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	ix, err := New(cfg, st)
	testenv.Must(t, err, "new indexer")
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{ix: ix, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = ix.Run(ctx); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
		}
	})
	return r
}

var pdaCache sync.Map // "sig/index" -> solana.PublicKey

func pdaOf(t *testing.T, program solana.PublicKey, sig solana.Signature, idx int) solana.PublicKey {
	key := fmt.Sprintf("%s/%s/%d", program, sig, idx)
	if v, ok := pdaCache.Load(key); ok {
		return v.(solana.PublicKey)
	}
	pda, err := attestation.DerivePDA(program, sig, idx)
	testenv.Must(t, err, "derive pda")
	pdaCache.Store(key, pda)
	return pda
}

func storedCount(t *testing.T, st *store.Store) int {
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations`).Scan(&n), "count")
	return n
}

// expected renders the chain's ground truth as the rows the store must hold.
func expected(t *testing.T, c *devnet.Chain) (atts, agents []string) {
	t.Helper()
	final := c.FinalizedSlot()
	_ = final
	seenAgents := map[solana.PublicKey]bool{}
	for _, e := range c.Events() {
		switch ev := e.Event.(type) {
		case prova.AttestationIssued:
			pda := pdaOf(t, c.ProgramID(), e.TxSignature, e.Index)
			atts = append(atts, attRow(pda.String(), ev.Agent.String(), ev.AgentID[:], int(ev.ActionType), ev.ActionHash[:],
				e.TxSignature.String(), e.Index, e.Slot, ev.Timestamp, ev.PrivacyMode, ev.Signature[:], true))
		case prova.AgentRegistered:
			seenAgents[ev.Agent] = true
		}
	}
	for pda := range seenAgents {
		acc := c.GetAccount(pda)
		if acc == nil {
			t.Fatalf("agent %s registered but has no account", pda)
		}
		a, err := prova.DecodeAgentAccount(acc.Data)
		testenv.Must(t, err, "decode agent")
		agents = append(agents, agentRow(pda.String(), a.Operator.String(), a.AgentID[:], a.PolicyRoot[:], a.Revoked))
	}
	sort.Strings(atts)
	sort.Strings(agents)
	return atts, agents
}

func attRow(pda, agent string, agentID []byte, typ int, hash []byte, tx string, idx int, slot uint64, ts int64, privacy bool, sig []byte, valid bool) string {
	return fmt.Sprintf("%s|%s|%x|%d|%x|%s|%d|%d|%d|%t|%x|%t", pda, agent, agentID, typ, hash, tx, idx, slot, ts, privacy, sig, valid)
}

func agentRow(pda, operator string, agentID, root []byte, revoked bool) string {
	return fmt.Sprintf("%s|%s|%x|%x|%t", pda, operator, agentID, root, revoked)
}

// stored reads the store's rows in the same rendering.
func stored(t *testing.T, st *store.Store) (atts, agents []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := st.Pool().Query(ctx, `SELECT pda, agent_pda, agent_id, action_type, action_hash, tx_signature, event_index, slot,
		extract(epoch from ts)::bigint, privacy_mode, agent_signature, signature_valid FROM attestations`)
	testenv.Must(t, err, "query attestations")
	for rows.Next() {
		var pda, agent, tx string
		var agentID, hash, sig []byte
		var typ int16
		var idx int32
		var slot, ts int64
		var privacy, valid bool
		testenv.Must(t, rows.Scan(&pda, &agent, &agentID, &typ, &hash, &tx, &idx, &slot, &ts, &privacy, &sig, &valid), "scan")
		atts = append(atts, attRow(pda, agent, agentID, int(typ), hash, tx, int(idx), uint64(slot), ts, privacy, sig, valid))
	}
	testenv.Must(t, rows.Err(), "rows")
	rows, err = st.Pool().Query(ctx, `SELECT pda, operator, agent_id, policy_root, revoked FROM agents`)
	testenv.Must(t, err, "query agents")
	for rows.Next() {
		var pda, op string
		var id, root []byte
		var revoked bool
		testenv.Must(t, rows.Scan(&pda, &op, &id, &root, &revoked), "scan agent")
		agents = append(agents, agentRow(pda, op, id, root, revoked))
	}
	testenv.Must(t, rows.Err(), "rows")
	sort.Strings(atts)
	sort.Strings(agents)
	return atts, agents
}

// diff describes how got differs from want (empty when equal).
func diff(want, got []string) string {
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	g := map[string]int{}
	for _, s := range got {
		g[s]++
	}
	var missing, extra []string
	for _, s := range want {
		if g[s] == 0 {
			missing = append(missing, s)
		}
	}
	for s, n := range g {
		if !w[s] || n > 1 {
			extra = append(extra, s)
		}
	}
	if len(missing)+len(extra) == 0 && len(want) == len(got) {
		return ""
	}
	cut := func(xs []string) []string { return xs[:min(len(xs), 3)] }
	return fmt.Sprintf("want %d rows, have %d; %d missing (e.g. %v), %d extra (e.g. %v)",
		len(want), len(got), len(missing), cut(missing), len(extra), cut(extra))
}

// waitExact waits until the store holds exactly the chain's ground truth.
func waitExact(t *testing.T, st *store.Store, c *devnet.Chain, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		wa, wg := expected(t, c)
		for storedCount(t, st) != len(wa) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		ga, gg := stored(t, st)
		da, dg := diff(wa, ga), diff(wg, gg)
		if da == "" && dg == "" {
			checkCounters(t, st, len(wa), len(wg))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("store differs from the chain after %s:\nattestations: %s\nagents: %s", timeout, da, dg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkCounters checks the write path's side effects were not doubled.
func checkCounters(t *testing.T, st *store.Store, atts, agents int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var counted, outboxAtts, outboxAgents int
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT COALESCE(sum(n), 0) FROM attestation_counts WHERE agent_pda = ''`).Scan(&counted), "counts")
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE event_type = 'attestation.created'),
		count(*) FILTER (WHERE event_type = 'agent.registered') FROM outbox`).Scan(&outboxAtts, &outboxAgents), "outbox")
	if counted != atts {
		t.Fatalf("attestation counter %d, rows %d", counted, atts)
	}
	if outboxAtts < atts || outboxAgents != agents {
		t.Fatalf("outbox has %d attestation and %d agent events for %d and %d rows", outboxAtts, outboxAgents, atts, agents)
	}
}

func unfinalized(t *testing.T, st *store.Store) int {
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM attestations WHERE NOT finalized)
		+ (SELECT count(*) FROM agents WHERE NOT finalized) + (SELECT count(*) FROM agent_events WHERE NOT finalized)`).Scan(&n), "unfinalized")
	return n
}

func gen(t *testing.T, c *devnet.Chain, agents, atts, batch int) devnet.Generated {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	g, err := c.Generate(ctx, agents, atts, batch)
	testenv.Must(t, err, "generate")
	return g
}

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

func TestDefaultWSURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:8899", "ws://127.0.0.1:8900"},
		{"https://rpc.example.com:443/x?k=1", "wss://rpc.example.com:444/x?k=1"},
		{"https://api.devnet.solana.com", "wss://api.devnet.solana.com"},
		{"http://[::1]:8899", "ws://[::1]:8900"},
	}
	for _, c := range cases {
		got, err := DefaultWSURL(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8899", "ftp://x:1"} {
		if _, err := DefaultWSURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.RPCURL != "http://127.0.0.1:8899" || c.WSURL != "ws://127.0.0.1:8900" ||
		c.ProgramID.String() != attestation.DefaultProgramID || c.Concurrency != 8 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_SOLANA_RPC_URL": "http://h:1", "ATTESTD_INDEXER_CONCURRENCY": "3",
		"ATTESTD_INDEXER_POLL_INTERVAL": "250ms"}))
	if err != nil || c.WSURL != "ws://h:2" || c.Concurrency != 3 || c.PollInterval != 250*time.Millisecond {
		t.Fatalf("set: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(nil))
	if err != nil || c.PendingTimeout != 10*time.Minute || c.ReconcileInterval != 5*time.Minute || c.ReconcileWindow != 9000 ||
		c.PendingRetry != time.Second || c.PendingMaxBackoff != time.Minute {
		t.Fatalf("pending and reconciliation defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_INDEXER_PENDING_TIMEOUT": "3m", "ATTESTD_INDEXER_RECONCILE_INTERVAL": "30s",
		"ATTESTD_INDEXER_RECONCILE_WINDOW": "100"}))
	if err != nil || c.PendingTimeout != 3*time.Minute || c.ReconcileInterval != 30*time.Second || c.ReconcileWindow != 100 {
		t.Fatalf("pending and reconciliation set: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"ATTESTD_PROGRAM_ID": "nope"}, {"ATTESTD_INDEXER_CONCURRENCY": "0"}, {"ATTESTD_INDEXER_POLL_INTERVAL": "soon"},
		{"ATTESTD_SOLANA_RPC_URL": "nope"}, {"ATTESTD_INDEXER_PENDING_TIMEOUT": "10ms"},
		{"ATTESTD_INDEXER_RECONCILE_WINDOW": "0"}, {"ATTESTD_INDEXER_RECONCILE_INTERVAL": "forever"},
	} {
		if _, err := ConfigFromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), "") {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestBatchesCutBetweenTransactions(t *testing.T) {
	ix := &Indexer{cfg: Config{Checkpoint: "c", ChunkRecords: 5}, m: newMetrics(prometheus.NewRegistry())}
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

func TestChainProbe(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@mainnet.helius-rpc.com/?api-key=secret": "https://mainnet.helius-rpc.com",
		"http://127.0.0.1:8899":                                  "http://127.0.0.1:8899",
		"not a url":                                              "",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redact %q = %q, want %q", in, got, want)
		}
	}
	c := startChain(t, devnet.Config{})
	p := NewChainProbe(c.RPCURL())
	if !p.Reachable(context.Background()) {
		t.Fatal("devnet not reachable")
	}
	down := NewChainProbe("http://127.0.0.1:1")
	if down.Reachable(context.Background()) {
		t.Fatal("closed port reachable")
	}
}

// metricValue sums the samples of a counter or gauge whose labels include
// the given ones.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	testenv.Must(t, err, "gather")
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				ok := false
				for _, l := range m.GetLabel() {
					ok = ok || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !ok {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
			if g := m.GetGauge(); g != nil {
				sum += g.GetValue()
			}
		}
	}
	return sum
}

func txRows(t *testing.T, st *store.Store, sig solana.Signature) int {
	t.Helper()
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE tx_signature = $1`, sig.String()).Scan(&n), "count")
	return n
}

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
	waitExact(t, st, c, 30*time.Second)
	testenv.Must(t, c.HideNextTransactions(1, devnet.Hide{For: 2 * time.Second, Statuses: true}), "hide")
	hidden := gen(t, c, 2, 7, 7).Records[0]
	testenv.WaitFor(t, "the indexer to give the hidden transaction up", 20*time.Second, func() bool {
		return metricValue(t, reg, "attestd_indexer_pending_resolved_total", "outcome", "vanished") >= 1
	})
	waitExact(t, st, c, 30*time.Second)
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
	// Remove its rows through the write path (counters kept right).
	_, err := st.Pool().Exec(ctx, `UPDATE attestations SET finalized = false WHERE tx_signature = $1`, lost.Signature.String())
	testenv.Must(t, err, "unfinalize")
	n, err := st.RemoveTransactions(ctx, []string{lost.Signature.String()})
	if err != nil || n != 30 {
		t.Fatalf("remove: %d %v", n, err)
	}
	waitExact(t, st, c, 30*time.Second)
	if v := metricValue(t, reg, "attestd_indexer_gap_transactions_repaired_total", "range", "finalized"); v != 1 {
		t.Fatalf("repaired transactions %v, want 1", v)
	}
	if v := metricValue(t, reg, "attestd_indexer_gap_attestations_repaired_total", "range", "finalized"); v != 30 {
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
