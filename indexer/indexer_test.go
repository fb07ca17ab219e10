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
	"github.com/attestd/attestd/internal/devnet"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/store"
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

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	waitFor(t, 30*time.Second, "every row finalized", func() bool { return unfinalized(t, st) == 0 })

	// Status as API processes read it.
	sr := NewStatusReader(st, c.RPCURL())
	s, err := sr.Read(context.Background())
	testenv.Must(t, err, "read status")
	if s.LastIndexedSlot == 0 || s.LastIndexedAt == nil || s.ChainSlot < s.LastIndexedSlot {
		t.Fatalf("status %+v", s)
	}
	waitFor(t, 10*time.Second, "synced status", func() bool {
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
	waitFor(t, 10*time.Second, "websocket up", func() bool { return r.ix.wsUp.Load() })

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
		waitFor(t, 10*time.Second, "websocket back", func() bool { return r.ix.wsUp.Load() })
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
	waitFor(t, 30*time.Second, "every row finalized", func() bool { return unfinalized(t, st) == 0 })
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
	waitFor(t, 20*time.Second, "every row finalized", func() bool { return unfinalized(t, st) == 0 })
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
	waitFor(t, 60*time.Second, "part of the backfill", func() bool { return first.ix.Ingested() >= 300 })
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
	waitFor(t, 10*time.Second, "takeover", follower.ix.IsLeader)
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
	for _, bad := range []map[string]string{
		{"ATTESTD_PROGRAM_ID": "nope"}, {"ATTESTD_INDEXER_CONCURRENCY": "0"}, {"ATTESTD_INDEXER_POLL_INTERVAL": "soon"},
		{"ATTESTD_SOLANA_RPC_URL": "nope"},
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
		shape = append(shape, fmt.Sprintf("%d/%d@%d", b.txs, len(b.batch.Attestations), b.batch.Checkpoint.Slot))
	}
	if got := strings.Join(shape, " "); got != "2/5@2 2/4@4 1/9@5" {
		t.Fatalf("batches %s", got)
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
