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
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func quietLogger() *slog.Logger {
	if os.Getenv("ATTESTD_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// logOnFailure is quietLogger, but what the indexer logged is shown (its
// last 60 lines) when the test fails: a wait that gives up then says what
// the indexer was doing.
func logOnFailure(t *testing.T) *slog.Logger {
	if os.Getenv("ATTESTD_TEST_VERBOSE") != "" {
		return quietLogger()
	}
	out := &testenv.Output{}
	t.Cleanup(func() {
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			t.Logf("the indexer's last %d log lines:\n%s", min(60, len(lines)), strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	return logger(out)
}

// logger writes everything down to debug to w.
func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	return newStoreWith(t, store.Options{})
}

// newStoreWith is newStore with opt.
func newStoreWith(t *testing.T, opt store.Options) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := store.Open(ctx, testenv.Database(t), opt)
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
		LockRetry: 200 * time.Millisecond, Logger: logOnFailure(t),
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
// The ground truth is read again whenever the store holds as many rows
// but other ones (the chain may have moved on); when the wait fails, the
// last difference is logged.
func waitExact(t *testing.T, st *store.Store, c *devnet.Chain, timeout time.Duration) {
	t.Helper()
	wa, wg := expected(t, c)
	var da, dg string
	held := false
	defer func() {
		if !held {
			t.Logf("store differs from the chain after %s:\nattestations: %s\nagents: %s", timeout, da, dg)
		}
	}()
	// Asked every 50 ms, as the loop it replaced did: a full comparison of
	// ten thousand rows under the race detector is not free.
	testenv.WaitForState(t, "the store to hold exactly the chain's ground truth", timeout, testenv.Every(50*time.Millisecond, func() (bool, string) {
		if n := storedCount(t, st); n != len(wa) {
			da, dg = fmt.Sprintf("want %d rows, have %d", len(wa), n), "not compared"
			return false, da
		}
		ga, gg := stored(t, st)
		da, dg = diff(wa, ga), diff(wg, gg)
		if da == "" && dg == "" {
			return true, ""
		}
		wa, wg = expected(t, c)
		return false, "as many rows as the chain holds, but they differ (logged below)"
	}))
	held = true
	checkCounters(t, st, len(wa), len(wg))
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
	// Ten thousand signed transactions under the race detector on a loaded
	// machine take minutes: an outer deadline, not a budget.
	g, err := c.Generate(testenv.Context(t, 2*testenv.Patience), agents, atts, batch)
	testenv.Must(t, err, "generate")
	return g
}

// metricValue sums the samples of a counter or gauge whose labels include the
// given ones.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return testenv.MetricSum(t, reg, name, labels...)
}

func txRows(t *testing.T, st *store.Store, sig solana.Signature) int {
	t.Helper()
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations WHERE tx_signature = $1`, sig.String()).Scan(&n), "count")
	return n
}
