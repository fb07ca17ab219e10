package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mr-tron/base58"
)

// Cursor is a keyset position: the sort key of the last row of a page.
type Cursor struct {
	Timestamp time.Time
	Slot      uint64
	PDA       string
}

// Filter selects attestations. Zero fields do not filter.
type Filter struct {
	AgentPDA   string
	ActionType *attestation.ActionType
	// ActionHash keeps the attestations of one payload hash (32 bytes;
	// nil: any), TxSignature those of one transaction ("": any): the
	// lookups "who attested this payload" and "what did this transaction
	// record". Both read their own index; totals are counted on it.
	ActionHash  []byte
	TxSignature string
	Range       Range
	Limit       int
	Offset      int
	After       *Cursor // keyset: rows strictly after this position
}

// Range is a half-open time range, From <= ts < To; a nil bound is open.
// Every instant is a bound, the zero time.Time included.
type Range struct{ From, To *time.Time }

// Open reports whether neither bound is set.
func (r Range) Open() bool { return r.From == nil && r.To == nil }

// Page is one page of attestations.
type Page struct {
	Items []attestation.Attestation
	Total int64
	Next  *Cursor // position of the last item when the page is full
}

const attestationColumns = `pda, agent_pda, agent_id, action_type, action_hash, privacy_mode, ts,
	agent_signature, tx_signature, slot, finalized`

// Statements of the fixed-shape reads (named so the EXPLAIN test checks
// exactly what runs).
const (
	getAttestationSQL = `SELECT ` + attestationColumns + ` FROM attestations WHERE pda = $1`
	recentSQL         = `SELECT ` + attestationColumns + ` FROM attestations WHERE agent_pda = $1
		ORDER BY ts DESC, slot DESC, pda DESC LIMIT 10`
)

// statsSQL reads the agent count, the attestations of the last 24 hours
// (from the hourly counters) and the indexed slot.
func statsSQL(now time.Time) (string, []any) {
	var a args
	from, to := now.Add(-24*time.Hour), now.Add(time.Second)
	last24h := countExpr(globalCounter, nil, Range{From: &from, To: &to}, &a)
	return `SELECT (SELECT count(*) FROM agents), ` + last24h + `,
			COALESCE((SELECT max(slot) FROM checkpoints), (SELECT max(slot) FROM attestations), 0)`, a
}

// summariseSQL reads an agent's first and last attestation times (on the
// index) and its counts of the last 24 hours and 7 days (from the hourly
// counters).
func summariseSQL(pda string, now time.Time) (string, []any) {
	var a args
	p := a.add(pda)
	to, day, week := now.Add(time.Second), now.Add(-24*time.Hour), now.Add(-7*24*time.Hour)
	last24h := countExpr(pda, nil, Range{From: &day, To: &to}, &a)
	last7d := countExpr(pda, nil, Range{From: &week, To: &to}, &a)
	return `SELECT
			(SELECT ts FROM attestations WHERE agent_pda = ` + p + ` ORDER BY ts ASC, slot ASC, pda ASC LIMIT 1),
			(SELECT ts FROM attestations WHERE agent_pda = ` + p + ` ORDER BY ts DESC, slot DESC, pda DESC LIMIT 1),
			` + last24h + `, ` + last7d, a
}

func scanAttestation(row pgx.Row) (attestation.Attestation, error) {
	var a attestation.Attestation
	var agentID, hash, sig []byte
	var typ int16
	var ts time.Time
	var slot int64
	var final bool
	if err := row.Scan(&a.PDA, &a.AgentPDA, &agentID, &typ, &hash, &a.PrivacyMode, &ts, &sig, &a.TxSignature, &slot, &final); err != nil {
		return a, err
	}
	a.AgentID = base58.Encode(agentID)
	a.ActionType = attestation.ActionType(typ)
	a.ActionHash = hex.EncodeToString(hash)
	a.Timestamp = attestation.At(ts)
	a.AgentSignature = base58.Encode(sig)
	a.Slot = uint64(slot)
	a.Commitment = attestation.Confirmed
	if final {
		a.Commitment = attestation.Finalized
	}
	return a, nil
}

// GetAttestation reads one attestation by pda.
func (s *Store) GetAttestation(ctx context.Context, pda string) (attestation.Attestation, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (attestation.Attestation, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		a, err := scanAttestation(db.QueryRow(ctx, getAttestationSQL, pda))
		if err == pgx.ErrNoRows {
			return a, ErrNotFound
		}
		if err != nil {
			return a, fmt.Errorf("read attestation: %w", err)
		}
		return a, nil
	})
}

// where builds the WHERE clause and arguments of a filter.
func (f Filter) where(withCursor bool) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.AgentPDA != "" {
		conds = append(conds, "agent_pda = "+arg(f.AgentPDA))
	}
	if f.ActionType != nil {
		conds = append(conds, "action_type = "+arg(int16(*f.ActionType)))
	}
	if f.ActionHash != nil {
		conds = append(conds, "action_hash = "+arg(f.ActionHash))
	}
	if f.TxSignature != "" {
		conds = append(conds, "tx_signature = "+arg(f.TxSignature))
	}
	if f.Range.From != nil {
		conds = append(conds, "ts >= "+arg(f.Range.From.UTC()))
	}
	if f.Range.To != nil {
		conds = append(conds, "ts < "+arg(f.Range.To.UTC()))
	}
	if withCursor && f.After != nil {
		conds = append(conds, fmt.Sprintf("(ts, slot, pda) < (%s, %s, %s)",
			arg(f.After.Timestamp.UTC()), arg(int64(f.After.Slot)), arg(f.After.PDA)))
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// listSQL is the statement ListAttestations runs for f.
func listSQL(f Filter) (string, []any) {
	where, args := f.where(true)
	args = append(args, f.Limit, f.Offset)
	return `SELECT ` + attestationColumns + ` FROM attestations` + where +
		fmt.Sprintf(` ORDER BY ts DESC, slot DESC, pda DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args
}

// ListAttestations returns one page, newest first: ts desc, slot desc, pda desc.
func (s *Store) ListAttestations(ctx context.Context, f Filter) (Page, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (Page, error) { return s.listAttestations(ctx, db, f) })
}

func (s *Store) listAttestations(ctx context.Context, db *pgxpool.Pool, f Filter) (Page, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	q, args := listSQL(f)
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("list attestations: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attestation.Attestation, error) { return scanAttestation(r) })
	if err != nil {
		return Page{}, fmt.Errorf("list attestations: %w", err)
	}
	total, err := count(ctx, db, f)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: items, Total: total}
	if f.Limit > 0 && len(items) == f.Limit {
		last := items[len(items)-1]
		p.Next = &Cursor{Timestamp: last.Timestamp.Time, Slot: last.Slot, PDA: last.PDA}
	}
	return p, nil
}

// countSQL is the statement count runs for f: it reads the maintained
// counters, and counts on the index only the partial hours at the edges
// of a time range (see countExpr).
func countSQL(f Filter) (string, []any) {
	if f.lookup() {
		// One payload's or one transaction's rows: counted on the lookup's
		// own index (no counter keeps them).
		f.After = nil
		where, args := f.where(false)
		return `SELECT count(*) FROM attestations` + where, args
	}
	var a args
	return `SELECT ` + countExpr(f.AgentPDA, f.ActionType, f.Range, &a), a
}

// lookup reports whether f names a payload hash or a transaction.
func (f Filter) lookup() bool { return f.ActionHash != nil || f.TxSignature != "" }

// count returns how many attestations match f (ignoring paging).
func count(ctx context.Context, db *pgxpool.Pool, f Filter) (int64, error) {
	var n int64
	q, args := countSQL(f)
	if err := db.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count attestations: %w", err)
	}
	return n, nil
}

// ByType maps every action type name to a count (zeros included).
type ByType map[string]int64

// NewByType is a ByType with every action type at zero.
func NewByType() ByType {
	m := make(ByType, attestation.NumActionTypes)
	for _, n := range attestation.ActionTypeNames() {
		m[n] = 0
	}
	return m
}

// Stats are the global counts.
type Stats struct {
	Agents       int64  `json:"agents"`
	Attestations int64  `json:"attestations"`
	ByType       ByType `json:"byType"`
	Last24h      int64  `json:"last24h"`
	IndexedSlot  uint64 `json:"indexedSlot"`
}

// Stats computes the global counts.
func (s *Store) Stats(ctx context.Context, now time.Time) (Stats, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (Stats, error) { return s.stats(ctx, db, now) })
}

func (s *Store) stats(ctx context.Context, db *pgxpool.Pool, now time.Time) (Stats, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	st := Stats{ByType: NewByType()}
	if err := byType(ctx, db, globalCounter, st.ByType, &st.Attestations); err != nil {
		return st, err
	}
	var slot int64
	q, args := statsSQL(now)
	err := db.QueryRow(ctx, q, args...).Scan(&st.Agents, &st.Last24h, &slot)
	if err != nil {
		return st, fmt.Errorf("read stats: %w", err)
	}
	st.IndexedSlot = uint64(slot)
	return st, nil
}

func byType(ctx context.Context, db *pgxpool.Pool, agent string, m ByType, total *int64) error {
	rows, err := db.Query(ctx, `SELECT action_type, n FROM attestation_counts WHERE agent_pda = $1`, agent)
	if err != nil {
		return fmt.Errorf("read counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ int16
		var n int64
		if err := rows.Scan(&typ, &n); err != nil {
			return fmt.Errorf("read counts: %w", err)
		}
		m[attestation.ActionType(typ).String()] += n
		*total += n
	}
	return rows.Err()
}

// agentSummary is what agent detail and agent stats share.
type agentSummary struct {
	total, last24h, last7d int64
	first, last            *attestation.Time
	byType                 ByType
}

func summarise(ctx context.Context, db *pgxpool.Pool, pda string, now time.Time) (agentSummary, error) {
	sum := agentSummary{byType: NewByType()}
	if err := byType(ctx, db, pda, sum.byType, &sum.total); err != nil {
		return sum, err
	}
	var first, last *time.Time
	q, args := summariseSQL(pda, now)
	err := db.QueryRow(ctx, q, args...).Scan(&first, &last, &sum.last24h, &sum.last7d)
	if err != nil {
		return sum, fmt.Errorf("summarise agent: %w", err)
	}
	if first != nil {
		sum.first = attestation.OptTime(first)
	}
	if last != nil {
		sum.last = attestation.OptTime(last)
	}
	return sum, nil
}

// GetAgent reads an agent with its metrics and policy history.
func (s *Store) GetAgent(ctx context.Context, pda string, now time.Time) (attestation.Agent, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (attestation.Agent, error) { return s.getAgent(ctx, db, pda, now) })
}

func (s *Store) getAgent(ctx context.Context, db *pgxpool.Pool, pda string, now time.Time) (attestation.Agent, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var a attestation.Agent
	var agentID, root, initialRoot []byte
	var registered, updated time.Time
	var revokedAt *time.Time
	var regTx string
	var regSlot int64
	err := db.QueryRow(ctx, `SELECT pda, operator, agent_id, policy_root, initial_policy_root, registered_at, revoked,
			revoked_at, updated_at, tx_signature, slot FROM agents WHERE pda = $1`, pda).
		Scan(&a.PDA, &a.Operator, &agentID, &root, &initialRoot, &registered, &a.Revoked, &revokedAt, &updated, &regTx, &regSlot)
	if err == pgx.ErrNoRows {
		return a, ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("read agent: %w", err)
	}
	a.AgentID = base58.Encode(agentID)
	a.PolicyRoot = hex.EncodeToString(root)
	a.RegisteredAt = attestation.At(registered)
	a.UpdatedAt = attestation.At(updated)
	if revokedAt != nil {
		a.RevokedAt = attestation.OptTime(revokedAt)
	}
	history := []attestation.PolicyChange{{PolicyRoot: hex.EncodeToString(initialRoot), UpdatedAt: a.RegisteredAt, TxSignature: regTx, Slot: uint64(regSlot)}}
	rows, err := db.Query(ctx, `SELECT policy_root, at, tx_signature, slot FROM agent_events
		WHERE agent_pda = $1 AND kind = 'policy_updated' ORDER BY at, slot, tx_signature, event_index`, pda)
	if err != nil {
		return a, fmt.Errorf("read policy history: %w", err)
	}
	for rows.Next() {
		var pc attestation.PolicyChange
		var r []byte
		var at time.Time
		var slot int64
		if err := rows.Scan(&r, &at, &pc.TxSignature, &slot); err != nil {
			rows.Close()
			return a, fmt.Errorf("read policy history: %w", err)
		}
		pc.PolicyRoot, pc.UpdatedAt, pc.Slot = hex.EncodeToString(r), attestation.At(at), uint64(slot)
		history = append(history, pc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("read policy history: %w", err)
	}
	last := history[len(history)-1]
	a.Policies = attestation.AgentPolicies{PolicyRoot: a.PolicyRoot, UpdatedAt: last.UpdatedAt, History: history}
	sum, err := summarise(ctx, db, pda, now)
	if err != nil {
		return a, err
	}
	a.Metrics = attestation.AgentMetrics{AttestationCount: sum.total, FirstAttestationAt: sum.first,
		LastAttestationAt: sum.last, Last24h: sum.last24h}
	return a, nil
}

// AgentStats is the per-agent statistics record.
type AgentStats struct {
	AgentPDA           string                    `json:"agentPda"`
	TotalAttestations  int64                     `json:"totalAttestations"`
	ByType             ByType                    `json:"byType"`
	FirstAttestationAt *attestation.Time         `json:"firstAttestationAt"`
	LastAttestationAt  *attestation.Time         `json:"lastAttestationAt"`
	Last24h            int64                     `json:"last24h"`
	Last7d             int64                     `json:"last7d"`
	RecentAttestations []attestation.Attestation `json:"recentAttestations"`
}

// GetAgentStats computes an agent's statistics; ErrNotFound when the agent
// is unknown.
func (s *Store) GetAgentStats(ctx context.Context, pda string, now time.Time) (AgentStats, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (AgentStats, error) { return s.getAgentStats(ctx, db, pda, now) })
}

func (s *Store) getAgentStats(ctx context.Context, db *pgxpool.Pool, pda string, now time.Time) (AgentStats, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE pda = $1)`, pda).Scan(&exists); err != nil {
		return AgentStats{}, fmt.Errorf("read agent: %w", err)
	}
	if !exists {
		return AgentStats{}, ErrNotFound
	}
	sum, err := summarise(ctx, db, pda, now)
	if err != nil {
		return AgentStats{}, err
	}
	rows, err := db.Query(ctx, recentSQL, pda)
	if err != nil {
		return AgentStats{}, fmt.Errorf("read recent attestations: %w", err)
	}
	recent, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attestation.Attestation, error) { return scanAttestation(r) })
	if err != nil {
		return AgentStats{}, fmt.Errorf("read recent attestations: %w", err)
	}
	return AgentStats{AgentPDA: pda, TotalAttestations: sum.total, ByType: sum.byType, FirstAttestationAt: sum.first,
		LastAttestationAt: sum.last, Last24h: sum.last24h, Last7d: sum.last7d, RecentAttestations: recent}, nil
}
