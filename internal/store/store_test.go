package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func open(t testing.TB) *Store {
	t.Helper()
	st, err := Open(context.Background(), testenv.Database(t), Options{})
	testenv.Must(t, err, "open")
	t.Cleanup(st.Close)
	applied, err := st.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	if len(applied) == 0 {
		t.Fatal("fresh database: no migration applied")
	}
	again, err := st.Migrate(context.Background())
	testenv.Must(t, err, "migrate again")
	if len(again) != 0 {
		t.Fatalf("second migrate applied %v", again)
	}
	return st
}

// bumps records the notifier's calls: how many, and their floors, which
// must be WAL positions that never go back.
type bumps struct {
	n      int
	floors []uint64
}

func (b *bumps) BumpEpoch(_ context.Context, floor uint64) error {
	b.n++
	b.floors = append(b.floors, floor)
	return nil
}

func (b *bumps) check(t *testing.T) {
	t.Helper()
	for i, f := range b.floors {
		if f == 0 || (i > 0 && f < b.floors[i-1]) {
			t.Fatalf("bump floors %v: want growing WAL positions", b.floors)
		}
	}
}

func rec(agent string, tx string, idx int, typ attestation.ActionType, ts time.Time, c attestation.Commitment) AttestationRecord {
	r := AttestationRecord{
		Event:      Event{TxSignature: tx, EventIndex: idx, Slot: uint64(ts.Unix()), Commitment: c},
		PDA:        fmt.Sprintf("pda-%s-%d", tx, idx),
		AgentPDA:   agent,
		ActionType: typ,
		Timestamp:  ts,
	}
	r.ActionHash = sha256.Sum256([]byte(r.PDA))
	return r
}

func scalar(t *testing.T, st *Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	testenv.Must(t, st.Pool().QueryRow(context.Background(), q, args...).Scan(&n), "query %s", q)
	return n
}

func TestApplyIsIdempotentAndKeepsCounters(t *testing.T) {
	t.Parallel()
	st := open(t)
	b := &bumps{}
	st.SetNotifier(b)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	batch := &Batch{
		Registrations: []AgentRegistration{{Event: Event{TxSignature: "reg1", Slot: 1, Commitment: attestation.Finalized},
			PDA: "agentA", Operator: "opA", At: now.Add(-time.Hour)}},
		Attestations: []AttestationRecord{
			rec("agentA", "tx1", 0, attestation.ToolCall, now, attestation.Confirmed),
			rec("agentA", "tx1", 1, attestation.Decision, now, attestation.Confirmed),
			rec("agentA", "tx2", 0, attestation.ToolCall, now.Add(time.Second), attestation.Finalized),
		},
		Checkpoint: &Checkpoint{Name: "indexer", Slot: 42, Signature: "tx2"},
	}
	got, err := st.Apply(ctx, batch)
	testenv.Must(t, err, "apply")
	if got != (Applied{Agents: 1, Attestations: 3}) || b.n != 1 {
		t.Fatalf("first apply %+v, bumps %d", got, b.n)
	}
	again, err := st.Apply(ctx, batch)
	testenv.Must(t, err, "apply again")
	if again.Changed() || b.n != 1 {
		t.Fatalf("second apply %+v, bumps %d: want no change and no bump", again, b.n)
	}
	// Same event under a different pda is still the same event.
	dup := batch.Attestations[0]
	dup.PDA = "other"
	if a, err := st.Apply(ctx, &Batch{Attestations: []AttestationRecord{dup}}); err != nil || a.Changed() {
		t.Fatalf("same (tx, index) stored twice: %+v %v", a, err)
	}
	if n := scalar(t, st, "SELECT count(*) FROM attestations"); n != 3 {
		t.Fatalf("%d rows", n)
	}
	b.check(t)
	if n := scalar(t, st, "SELECT count(*) FROM outbox WHERE event_type = 'attestation.created'"); n != 3 {
		t.Fatalf("%d outbox rows, want one per new attestation", n)
	}
	if n := scalar(t, st, "SELECT count(*) FROM outbox WHERE event_type = 'agent.registered'"); n != 1 {
		t.Fatalf("%d agent outbox rows", n)
	}
	var payload []byte
	testenv.Must(t, st.Pool().QueryRow(ctx, "SELECT payload FROM outbox WHERE event_type = 'attestation.created' ORDER BY id LIMIT 1").Scan(&payload), "payload")
	var a attestation.Attestation
	testenv.Must(t, json.Unmarshal(payload, &a), "decode payload")
	if a.AgentPDA != "agentA" || a.TxSignature != "tx1" {
		t.Fatalf("outbox payload %s", payload)
	}
	cp, ok, err := st.Checkpoint(ctx, "indexer")
	if err != nil || !ok || cp.Slot != 42 || cp.Signature != "tx2" {
		t.Fatalf("checkpoint %+v %v %v", cp, ok, err)
	}
	toolCall := attestation.ToolCall
	page, err := st.ListAttestations(ctx, Filter{AgentPDA: "agentA", ActionType: &toolCall, Limit: 10})
	testenv.Must(t, err, "list")
	if page.Total != 2 || len(page.Items) != 2 || page.Items[0].TxSignature != "tx2" {
		t.Fatalf("page %+v", page)
	}
	stats, err := st.Stats(ctx, now)
	testenv.Must(t, err, "stats")
	if stats.Attestations != 3 || stats.ByType["ToolCall"] != 2 || stats.Agents != 1 || stats.IndexedSlot < 42 {
		t.Fatalf("stats %+v", stats)
	}
	// A batch that fails part-way stores nothing.
	bad := rec("agentA", "tx9", 0, attestation.ActionType(9), now, attestation.Confirmed)
	if _, err := st.Apply(ctx, &Batch{Attestations: []AttestationRecord{rec("agentA", "tx8", 0, attestation.Custom, now, attestation.Confirmed), bad}}); err == nil {
		t.Fatal("invalid action type accepted")
	}
	if n := scalar(t, st, "SELECT count(*) FROM attestations WHERE tx_signature = 'tx8'"); n != 0 {
		t.Fatal("partial batch stored")
	}
}

func TestFinalizeAndForkRemoval(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	var root1, root2 [32]byte
	root1[0], root2[0] = 1, 2
	_, err := st.Apply(ctx, &Batch{
		Registrations: []AgentRegistration{{Event: Event{TxSignature: "reg", Slot: 1, Commitment: attestation.Finalized},
			PDA: "agentA", Operator: "op", PolicyRoot: root1, At: now.Add(-time.Hour)}},
		PolicyUpdates: []PolicyUpdate{{Event: Event{TxSignature: "pol", Slot: 5, Commitment: attestation.Confirmed},
			PDA: "agentA", PolicyRoot: root2, At: now.Add(-time.Minute)}},
		Revocations: []AgentRevocation{{Event: Event{TxSignature: "rev", Slot: 6, Commitment: attestation.Confirmed},
			PDA: "agentA", At: now}},
		Attestations: []AttestationRecord{
			rec("agentA", "keep", 0, attestation.Custom, now, attestation.Confirmed),
			rec("agentA", "gone", 0, attestation.Custom, now, attestation.Confirmed),
			rec("agentA", "gone", 1, attestation.ToolCall, now, attestation.Confirmed),
			rec("agentA", "final", 0, attestation.Custom, now, attestation.Finalized),
		},
	})
	testenv.Must(t, err, "apply")
	ag, err := st.GetAgent(ctx, "agentA", now)
	testenv.Must(t, err, "agent")
	if !ag.Revoked || ag.PolicyRoot[:2] != "02" || len(ag.Policies.History) != 2 {
		t.Fatalf("agent before fork %+v", ag)
	}
	pending, err := st.ConfirmedTransactions(ctx, 100)
	testenv.Must(t, err, "pending")
	if len(pending) != 4 { // keep, gone, pol, rev
		t.Fatalf("pending %+v", pending)
	}
	n, err := st.Finalize(ctx, []string{"keep"})
	if err != nil || n != 1 {
		t.Fatalf("finalize %d %v", n, err)
	}
	n, err = st.RemoveTransactions(ctx, []string{"gone", "keep", "final", "pol", "rev"})
	testenv.Must(t, err, "remove")
	if n != 4 { // 2 attestations of "gone", the policy update and the revocation
		t.Fatalf("removed %d rows, want 4", n)
	}
	if c := scalar(t, st, "SELECT count(*) FROM attestations"); c != 2 {
		t.Fatalf("%d attestations left, want 2 (finalized ones survive)", c)
	}
	stats, err := st.Stats(ctx, now)
	testenv.Must(t, err, "stats")
	if stats.Attestations != 2 || stats.ByType["ToolCall"] != 0 || stats.ByType["Custom"] != 2 {
		t.Fatalf("counters after fork %+v", stats)
	}
	ag, err = st.GetAgent(ctx, "agentA", now)
	testenv.Must(t, err, "agent")
	if ag.Revoked || ag.RevokedAt != nil || ag.PolicyRoot[:2] != "01" || len(ag.Policies.History) != 1 || ag.Metrics.AttestationCount != 2 {
		t.Fatalf("agent after fork %+v", ag)
	}
}

// TestEveryReadIsAnIndexScan loads 1M attestations and checks the plan of
// every statement the API runs: none may scan the attestations table.
func TestEveryReadIsAnIndexScan(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 1M rows")
	}
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	start := time.Now()
	// Loaded as a bulk load is: secondary indexes (and the hourly
	// counters' keys) built after the rows, not kept row by row, which
	// made this load 90 s of PostgreSQL's time; the log queue and the
	// daily counters filled in one pass each, as their migrations do,
	// rather than by their triggers. What the plans are made from is the
	// same: the rows, every index, fresh statistics.
	restore := bulkLoad(t, st, "attestation_hours_pkey,attestation_days_pkey,log_queue_pkey",
		"ALTER TABLE attestations DISABLE TRIGGER attestations_log_inserted",
		"ALTER TABLE attestation_hours DISABLE TRIGGER attestation_hours_days_insert")
	_, err := st.Pool().Exec(ctx, `
		INSERT INTO agents (pda, operator, agent_id, policy_root, initial_policy_root, registered_at, updated_at, tx_signature, event_index, slot, finalized)
		SELECT 'agent' || a, 'op' || a, sha256(a::text::bytea), sha256(a::text::bytea), sha256(a::text::bytea),
			now() - interval '100 days', now(), 'reg' || a, 0, a, true
		FROM generate_series(1, 1000) a;
		INSERT INTO attestations (pda, agent_pda, agent_id, action_type, action_hash, privacy_mode, ts, agent_signature,
			signature_valid, tx_signature, event_index, slot, finalized)
		SELECT 'pda' || i, 'agent' || (i % 1000 + 1), sha256((i % 1000)::text::bytea), i % 7, sha256(i::text::bytea), i % 5 = 0,
			now() - (i || ' seconds')::interval * 8, sha256(i::text::bytea) || sha256(i::text::bytea), true,
			'tx' || (i / 50), i % 50, 1000000000 - i / 50, true
		FROM generate_series(1, 1000000) i;
		INSERT INTO agent_events (tx_signature, event_index, agent_pda, kind, policy_root, at, slot, finalized)
		SELECT 'pol' || e, 0, 'agent' || (e % 1000 + 1), 'policy_updated', sha256(e::text::bytea), now() - (e || ' minutes')::interval, e, true
		FROM generate_series(1, 20000) e;
		INSERT INTO attestation_counts SELECT agent_pda, action_type, count(*) FROM attestations GROUP BY 1, 2;
		INSERT INTO attestation_counts SELECT '', action_type, count(*) FROM attestations GROUP BY 2;
		INSERT INTO attestation_hours SELECT COALESCE(agent_pda, ''), COALESCE(action_type, -1), hour, count(*),
			count(*) FILTER (WHERE privacy_mode)
		FROM (SELECT agent_pda, action_type, privacy_mode, date_trunc('hour', ts, 'UTC') AS hour FROM attestations) a
		GROUP BY GROUPING SETS ((agent_pda, action_type, hour), (agent_pda, hour), (action_type, hour), (hour));
		INSERT INTO attestation_repeats SELECT agent_pda, action_hash FROM attestations WHERE pda LIKE '%06';
		INSERT INTO log_queue (pda, slot, tx_signature, event_index)
		SELECT pda, slot, tx_signature, event_index FROM attestations WHERE finalized;
		INSERT INTO attestation_days (agent_pda, action_type, day, n)
		SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC'), sum(n) FROM attestation_hours GROUP BY 1, 2, 3;`)
	testenv.Must(t, err, "load 1M rows")
	restore()
	// What autovacuum does in production: statistics and the visibility map
	// (which makes index-only counts cheap).
	_, err = st.Pool().Exec(ctx, "VACUUM ANALYZE")
	testenv.Must(t, err, "vacuum")
	t.Logf("loaded 1M rows in %s", time.Since(start).Round(time.Millisecond))
	now := time.Now()
	typ := attestation.Decision
	day := now.Add(-48 * time.Hour)
	inHour := day.Add(10 * time.Minute)
	longAgo := day.Add(-90 * 24 * time.Hour)
	cursor := &Cursor{Timestamp: now.Add(-30 * 24 * time.Hour), Slot: 999_000_000, PDA: "pda5"}
	hash77 := sha256.Sum256([]byte("77"))
	type stmt struct {
		name string
		sql  string
		args []any
	}
	var stmts []stmt
	filters := map[string]Filter{
		"all":                          {Limit: 20},
		"offset":                       {Limit: 100, Offset: 100_000},
		"cursor":                       {Limit: 100, After: cursor},
		"agent":                        {AgentPDA: "agent7", Limit: 20},
		"type":                         {ActionType: &typ, Limit: 20},
		"agent+type":                   {AgentPDA: "agent7", ActionType: &typ, Limit: 20},
		"range":                        {Range: Range{From: &day, To: &now}, Limit: 20},
		"agent+range":                  {AgentPDA: "agent7", Range: Range{From: &day}, Limit: 20},
		"type+range":                   {ActionType: &typ, Range: Range{From: &day, To: &now}, Limit: 20},
		"agent+type+range":             {AgentPDA: "agent7", ActionType: &typ, Range: Range{To: &day}, Limit: 20},
		"agent+cursor":                 {AgentPDA: "agent7", After: cursor, Limit: 20},
		"type+range+cursor":            {ActionType: &typ, Range: Range{From: &longAgo}, After: cursor, Limit: 20},
		"to":                           {Range: Range{To: &day}, Limit: 20},
		"type+to":                      {ActionType: &typ, Range: Range{To: &day}, Limit: 20},
		"long range":                   {Range: Range{From: &longAgo, To: &day}, Limit: 20},
		"within an hour":               {Range: Range{From: &day, To: &inHour}, Limit: 20},
		"action hash":                  {ActionHash: hash77[:], Limit: 20},
		"action hash+cursor":           {ActionHash: hash77[:], After: cursor, Limit: 20},
		"action hash+agent+type+range": {ActionHash: hash77[:], AgentPDA: "agent7", ActionType: &typ, Range: Range{From: &longAgo, To: &day}, Limit: 20},
		"transaction":                  {TxSignature: "tx77", Limit: 20},
		"transaction+cursor":           {TxSignature: "tx77", After: cursor, Limit: 100},
	}
	for name, f := range filters {
		q, args := listSQL(f)
		stmts = append(stmts, stmt{"list " + name, q, args})
		q, args = countSQL(f)
		stmts = append(stmts, stmt{"count " + name, q, args})
	}
	statsQ, statsArgs := statsSQL(now)
	sumQ, sumArgs := summariseSQL("agent7", now)
	stmts = append(stmts,
		stmt{"get attestation", getAttestationSQL, []any{"pda77"}},
		stmt{"stats", statsQ, statsArgs},
		stmt{"summarise agent", sumQ, sumArgs},
		stmt{"recent of agent", recentSQL, []any{"agent7"}},
		stmt{"known transactions", knownTransactionsSQL, []any{[]string{"tx5", "tx19999", "nope"}}},
		stmt{"first activity", firstActivitySQL, []any{""}},
	)
	overviewQ, overviewArgs := overviewSQL(now)
	topQ, topArgs := topAgentsSQL(now)
	operatorQ, operatorArgs := listAgentsSQL(AgentFilter{Operator: "op7", Limit: 20})
	stmts = append(stmts, stmt{"overview", overviewQ, overviewArgs}, stmt{"top agents", topQ, topArgs},
		stmt{"agents of an operator", operatorQ, operatorArgs})
	agentsQ, agentsArgs := listAgentsSQL(AgentFilter{Limit: 100})
	agentsCurQ, agentsCurArgs := listAgentsSQL(AgentFilter{Limit: 100, After: &AgentCursor{ActivityAt: day, PDA: "agent5"}})
	actQ, actArgs := activitySQL("", day.Add(-7*24*time.Hour), now, BucketHour)
	dayQ, dayArgs := activitySQL("", longAgo, now, BucketDay)
	agentActQ, agentActArgs := activitySQL("agent7", longAgo, now, BucketDay)
	stmts = append(stmts, stmt{"list agents", agentsQ, agentsArgs}, stmt{"list agents after a cursor", agentsCurQ, agentsCurArgs},
		stmt{"activity by hour", actQ, actArgs}, stmt{"activity by day", dayQ, dayArgs}, stmt{"agent activity by day", agentActQ, agentActArgs})
	// The forensic report of an agent over 90 days, and the write path's
	// search for repeated hashes.
	period := Range{From: &longAgo, To: &day}
	from, to := bound(period.From, pgtype.NegativeInfinity), bound(period.To, pgtype.Infinity)
	sp := splitHours(period)
	h1, h2 := []time.Time{floorHour(longAgo)}, []time.Time{floorHour(day)}
	stmts = append(stmts,
		stmt{"forensic hours", forensicHoursSQL, []any{"agent7", sp.lo, sp.hi, sp.edge1From, sp.edge1To, sp.edge2From, sp.edge2To, actionTypes}},
		stmt{"forensic side counts", forensicSideSQL, []any{"agent7", from, to}},
		stmt{"forensic bursts", forensicBurstsSQL, []any{"agent7", from, to, h1, 5, 100}},
		stmt{"forensic gap ends", forensicGapEndsSQL, []any{"agent7", from, to, h1, h2}},
		stmt{"forensic gaps scan", forensicGapsScanSQL, []any{"agent7", from, to, int64(60e6), 100}},
		stmt{"forensic duplicates", forensicDuplicatesSQL, []any{"agent7", from, to, 10, 100}},
		stmt{"forensic revocation", forensicRevocationSQL, []any{"agent7"}},
		stmt{"forensic after revocation", forensicAfterRevocationSQL, []any{"agent7", from, to, day, int64(5), 100}},
		stmt{"forensic invalid", forensicInvalidSQL, []any{"agent7", from, to, 100}},
		stmt{"forensic newest", forensicNewestSQL, []any{"agent7", from, to, 1000}},
		stmt{"record repeats", recordRepeatsSQL, []any{[]string{"new1", "new2"}, []string{"agent7", "agent8"},
			[][]byte{make([]byte, 32), make([]byte, 32)}}},
	)
	// Both plans of each statement: the custom plan made for its values,
	// and the generic plan our connections use (plan_cache_mode, see tune).
	conn, err := st.Pool().Acquire(ctx)
	testenv.Must(t, err, "acquire")
	defer conn.Release()
	var mode string
	testenv.Must(t, conn.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode), "show plan_cache_mode")
	if mode != "force_generic_plan" {
		t.Fatalf("plan_cache_mode %q: connections should use generic plans", mode)
	}
	for i, s := range stmts {
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+s.sql, s.args...).Scan(&plan); err != nil {
			t.Fatalf("%s: explain: %v", s.name, err)
		}
		if scans := seqScans(t, plan); len(scans) > 0 {
			t.Errorf("%s: sequential scan of %v\n%s\n%s", s.name, scans, s.sql, plan)
		}
		generic := genericPlan(t, conn.Conn(), fmt.Sprintf("generic_%d", i), s.sql, s.args)
		if scans := seqScans(t, generic); len(scans) > 0 {
			t.Errorf("%s: the generic plan scans %v sequentially\n%s\n%s", s.name, scans, s.sql, generic)
		}
		// A generic plan keeps its parameters (where a node shows them).
		if s.name == "get attestation" && !bytes.Contains(generic, []byte("$1")) {
			t.Errorf("%s: not a generic plan (no $1 in it)\n%s", s.name, generic)
		}
	}
}

// bulkLoad prepares st's database for a bulk load: it drops every index
// that backs no constraint, and the constraints named in keys, and runs
// the statements in off. The function it returns builds them again from
// their definitions, and turns every trigger of attestations and
// attestation_hours back on.
func bulkLoad(t *testing.T, st *Store, keys string, off ...string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var defs []string
	rows, err := st.Pool().Query(ctx, `
		SELECT 'ALTER TABLE ' || conrelid::regclass || ' DROP CONSTRAINT ' || quote_ident(conname),
			'ALTER TABLE ' || conrelid::regclass || ' ADD CONSTRAINT ' || quote_ident(conname) || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE conname = ANY(string_to_array($1, ','))
		UNION ALL
		SELECT 'DROP INDEX ' || quote_ident(schemaname) || '.' || quote_ident(indexname), indexdef
		FROM pg_indexes i WHERE schemaname = 'public'
			AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)`, keys)
	testenv.Must(t, err, "indexes")
	var drops []string
	for rows.Next() {
		var drop, def string
		testenv.Must(t, rows.Scan(&drop, &def), "index")
		drops, defs = append(drops, drop), append(defs, def)
	}
	testenv.Must(t, rows.Err(), "indexes")
	if len(drops) < 10 {
		t.Fatalf("only %d indexes and keys to drop: %v", len(drops), drops)
	}
	for _, q := range append(drops, off...) {
		_, err := st.Pool().Exec(ctx, q)
		testenv.Must(t, err, "%s", q)
	}
	return func() {
		t.Helper()
		for _, q := range append(defs, "ALTER TABLE attestations ENABLE TRIGGER ALL", "ALTER TABLE attestation_hours ENABLE TRIGGER ALL") {
			_, err := st.Pool().Exec(ctx, q)
			testenv.Must(t, err, "%s", q)
		}
	}
}

// genericPlan explains the generic plan of sql, prepared as name: EXPLAIN
// EXECUTE with args written as literals of the parameters' types (EXPLAIN
// with parameters would plan for their values).
func genericPlan(t *testing.T, conn *pgx.Conn, name, sql string, args []any) []byte {
	t.Helper()
	ctx := context.Background()
	sd, err := conn.Prepare(ctx, name, sql)
	testenv.Must(t, err, "prepare %s", name)
	lits := make([]string, len(args))
	for i, a := range args {
		var typ, lit string
		testenv.Must(t, conn.QueryRow(ctx, "SELECT format_type($1, NULL)", sd.ParamOIDs[i]).Scan(&typ), "type of $%d", i+1)
		testenv.Must(t, conn.QueryRow(ctx, "SELECT quote_nullable($1::"+typ+")", a).Scan(&lit), "literal of $%d", i+1)
		lits[i] = lit + "::" + typ
	}
	var plan []byte
	testenv.Must(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+name+"("+strings.Join(lits, ", ")+")").Scan(&plan), "explain %s", name)
	return plan
}

// seqScans lists the relations a JSON plan scans sequentially, ignoring
// the small tables (agents, checkpoints) whose size does not grow with
// attestations.
func seqScans(t *testing.T, plan []byte) []string {
	var root []map[string]any
	if err := json.Unmarshal(plan, &root); err != nil {
		t.Fatalf("plan: %v", err)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" {
			rel, _ := n["Relation Name"].(string)
			if rel != "agents" && rel != "checkpoints" {
				out = append(out, rel)
			}
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				walk(k.(map[string]any))
			}
		}
	}
	for _, r := range root {
		walk(r["Plan"].(map[string]any))
	}
	return out
}

// TestMigrationsAreOrderedAndNamed: every migration is NNNN_name, with
// numbers strictly increasing from 0001. Numbers are reserved by work in
// flight, so a gap can exist until that work lands; a duplicate cannot.
func TestMigrationsAreOrderedAndNamed(t *testing.T) {
	ms, err := Migrations()
	testenv.Must(t, err, "migrations")
	name := regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+$`)
	prev := 0
	for i, m := range ms {
		g := name.FindStringSubmatch(m.Version)
		if g == nil {
			t.Fatalf("migration %d is %q: want NNNN_name", i, m.Version)
		}
		n, _ := strconv.Atoi(g[1])
		if (i == 0 && n != 1) || n <= prev {
			t.Fatalf("migration %d is %s after number %d", i, m.Version, prev)
		}
		prev = n
	}
}

func TestVerifiedDigestBindsTheCheckedBytes(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	good := rec("agentA", "tx1", 0, attestation.ToolCall, now, attestation.Finalized)
	good.SignatureValid = true
	bad := rec("agentA", "tx1", 1, attestation.ToolCall, now, attestation.Finalized)
	bad.SignatureValid = false
	_, err := st.Apply(ctx, &Batch{Attestations: []AttestationRecord{good, bad}})
	testenv.Must(t, err, "apply")
	rows, err := st.VerifyRows(ctx, []string{good.PDA, bad.PDA})
	testenv.Must(t, err, "verify rows")
	if !rows[good.PDA].CheckedAtIngest || rows[bad.PDA].CheckedAtIngest {
		t.Fatalf("checked at ingest: good %v, bad %v", rows[good.PDA].CheckedAtIngest, rows[bad.PDA].CheckedAtIngest)
	}
	// Any change to the checked bytes breaks the binding.
	for _, col := range []string{"action_hash", "agent_id"} {
		_, err := st.Pool().Exec(ctx, "UPDATE attestations SET "+col+" = sha256("+col+") WHERE pda = $1", good.PDA)
		testenv.Must(t, err, "tamper %s", col)
		rows, err = st.VerifyRows(ctx, []string{good.PDA})
		testenv.Must(t, err, "verify rows")
		if rows[good.PDA].CheckedAtIngest {
			t.Fatalf("%s changed, row still counts as checked", col)
		}
	}
}

// TestKeysMadeBeforeRolesBecomeAdmin: keys stored before migration
// 0004_key_roles become admin keys (they were made by the CLI, or by an
// account holder whose key could already do everything); afterwards every
// key states its role, and only admin and read exist.
func TestKeysMadeBeforeRolesBecomeAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, testenv.Database(t), Options{})
	testenv.Must(t, err, "open")
	t.Cleanup(st.Close)
	ms, err := Migrations()
	testenv.Must(t, err, "migrations")
	_, err = st.Pool().Exec(ctx, `CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	testenv.Must(t, err, "schema_migrations")
	for _, m := range ms {
		if m.Version >= "0004" {
			break
		}
		_, err := st.Pool().Exec(ctx, m.SQL)
		testenv.Must(t, err, "apply %s", m.Version)
		_, err = st.Pool().Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.Version)
		testenv.Must(t, err, "record %s", m.Version)
	}
	acc, _, err := st.EnsureAccount(ctx, "old")
	testenv.Must(t, err, "account")
	_, err = st.Pool().Exec(ctx, `INSERT INTO api_keys (account_id, prefix, key_hash, label) VALUES ($1, 'Prevkey1', $2, 'before roles')`,
		acc.ID, make([]byte, 32))
	testenv.Must(t, err, "insert a key the old way")
	applied, err := st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	if len(applied) == 0 || !strings.HasPrefix(applied[0], "0004_") {
		t.Fatalf("applied %v, want 0004_key_roles first", applied)
	}
	k, err := st.KeyByPrefix(ctx, "Prevkey1")
	testenv.Must(t, err, "read old key")
	if k.Role != "admin" {
		t.Fatalf("a key made before roles has role %q, want admin", k.Role)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO api_keys (account_id, prefix, key_hash) VALUES ($1, 'Newkey11', $2)`,
		acc.ID, make([]byte, 32)); err == nil {
		t.Error("a key without a role was stored after the migration")
	}
	if _, err := st.InsertKey(ctx, acc.ID, "Newkey12", [32]byte{}, "", "owner", 0); err == nil {
		t.Error("a key with role owner was stored")
	}
	r, err := st.InsertKey(ctx, acc.ID, "Newkey13", [32]byte{}, "", "read", 0)
	testenv.Must(t, err, "insert a read key")
	if r.Role != "read" {
		t.Fatalf("inserted role %q", r.Role)
	}
	// A revocation limited to read keys leaves an admin key alone.
	if _, err := st.RevokeKey(ctx, "Prevkey1", acc.ID, []string{"read"}); err != ErrNotFound {
		t.Fatalf("revoke an admin key as read: %v, want ErrNotFound", err)
	}
	if k, _ := st.KeyByPrefix(ctx, "Prevkey1"); k.Revoked() {
		t.Fatal("the admin key was revoked")
	}
	if _, err := st.RevokeKey(ctx, "Newkey13", acc.ID, []string{"read"}); err != nil {
		t.Fatalf("revoke a read key as read: %v", err)
	}
}

func TestKnownTransactions(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	_, err := st.Apply(ctx, &Batch{
		Registrations: []AgentRegistration{{Event: Event{TxSignature: "txReg", Slot: 1}, PDA: "agentA", Operator: "op", At: now}},
		Revocations:   []AgentRevocation{{Event: Event{TxSignature: "txRev", Slot: 3}, PDA: "agentA", At: now}},
		Attestations:  []AttestationRecord{rec("agentA", "txAtt", 0, attestation.Decision, now, attestation.Confirmed)},
	})
	testenv.Must(t, err, "apply")
	known, err := st.KnownTransactions(ctx, []string{"txReg", "txRev", "txAtt", "txNone", "txAtt"})
	testenv.Must(t, err, "known")
	if len(known) != 3 || !known["txReg"] || !known["txRev"] || !known["txAtt"] || known["txNone"] {
		t.Fatalf("known %v", known)
	}
	if known, err := st.KnownTransactions(ctx, nil); err != nil || len(known) != 0 {
		t.Fatalf("none: %v %v", known, err)
	}
}
