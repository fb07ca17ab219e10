package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Windows of the overview's recent figures.
const (
	// RecentWindow is the span of Overview.LastRecent: how fast the index
	// grows now.
	RecentWindow = 5 * time.Minute
	// TopAgents is how many agents Overview.TopAgents lists.
	TopAgents = 5
)

// TopAgent is an agent and its attestations in the last 24 hours.
type TopAgent struct {
	AgentPDA     string `json:"agentPda"`
	Attestations int64  `json:"attestations"`
}

// Overview is what the home page says is happening: the index's recent
// pace, the agents active in the last 24 hours and the busiest of them,
// and how far finality trails.
type Overview struct {
	Agents       int64
	Attestations int64
	// LastRecent counts the attestations of the last RecentWindow,
	// Last24h those of the last 24 hours (both up to now, inclusive of
	// its second).
	LastRecent int64
	Last24h    int64
	// ActiveAgents24h counts the agents with an attestation in the last
	// 24 hours; TopAgents are the busiest of them (most first, then by
	// pda), at most TopAgents.
	ActiveAgents24h int64
	TopAgents       []TopAgent
	// Unfinalized counts the attestations not finalized yet;
	// OldestUnfinalized is the oldest one's time (nil when none).
	Unfinalized       int64
	OldestUnfinalized *time.Time
}

// overviewSQL reads the overview's counts: the recent window on the
// order index, the last 24 hours from the hourly counters (edges on the
// index), the active agents from the agents' newest attestation, the
// unfinalized rows on their partial index.
func overviewSQL(now time.Time) (string, []any) {
	var a args
	to := now.Add(time.Second)
	day, recent := now.Add(-24*time.Hour), now.Add(-RecentWindow)
	last24h := countExpr(globalCounter, nil, Range{From: &day, To: &to}, &a)
	return `SELECT (SELECT count(*) FROM agents),
			(SELECT COALESCE(sum(n), 0) FROM attestation_counts WHERE agent_pda = ` + a.add(globalCounter) + `)::bigint,
			(SELECT count(*) FROM attestations WHERE ts >= ` + a.add(recent) + ` AND ts < ` + a.add(to) + `),
			` + last24h + `,
			(SELECT count(*) FROM agents WHERE last_attestation_at >= ` + a.add(day) + `),
			(SELECT count(*) FROM attestations WHERE NOT finalized),
			(SELECT min(ts) FROM attestations WHERE NOT finalized)`, a
}

// topAgentsSQL ranks the agents active in the last 24 hours by their
// attestations in it: per agent, the whole hours from the hourly counters
// and the partial hours at both edges on the agent's index (as countExpr
// counts one agent). Only agents whose newest attestation is in the window
// are read.
func topAgentsSQL(now time.Time) (string, []any) {
	var a args
	from, to := now.Add(-24*time.Hour).UTC(), now.Add(time.Second).UTC()
	hf, ht := ceilHour(from), floorHour(to)
	return `SELECT pda, n FROM (
			SELECT pda,
				(SELECT count(*) FROM attestations t WHERE t.agent_pda = g.pda AND t.ts >= ` + a.add(from) + ` AND t.ts < ` + a.add(hf) + `)
				+ (SELECT COALESCE(sum(n), 0) FROM attestation_hours h WHERE h.agent_pda = g.pda AND h.action_type = ` + a.add(int16(allTypes)) +
		` AND h.hour >= ` + a.add(hf) + ` AND h.hour < ` + a.add(ht) + `)
				+ (SELECT count(*) FROM attestations t WHERE t.agent_pda = g.pda AND t.ts >= ` + a.add(ht) + ` AND t.ts < ` + a.add(to) + `) AS n
			FROM agents g WHERE g.last_attestation_at >= ` + a.add(from) + `
		) r WHERE n > 0 ORDER BY n DESC, pda ASC LIMIT ` + a.add(TopAgents), a
}

// Overview reads the home page's figures at now.
func (s *Store) Overview(ctx context.Context, now time.Time) (Overview, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (Overview, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		var o Overview
		q, args := overviewSQL(now)
		if err := db.QueryRow(ctx, q, args...).Scan(&o.Agents, &o.Attestations, &o.LastRecent, &o.Last24h,
			&o.ActiveAgents24h, &o.Unfinalized, &o.OldestUnfinalized); err != nil {
			return o, fmt.Errorf("read overview: %w", err)
		}
		q, args = topAgentsSQL(now)
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			return o, fmt.Errorf("read top agents: %w", err)
		}
		o.TopAgents, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TopAgent, error) {
			var t TopAgent
			return t, r.Scan(&t.AgentPDA, &t.Attestations)
		})
		if err != nil {
			return o, fmt.Errorf("read top agents: %w", err)
		}
		if o.TopAgents == nil {
			o.TopAgents = []TopAgent{}
		}
		if o.OldestUnfinalized != nil {
			t := o.OldestUnfinalized.UTC()
			o.OldestUnfinalized = &t
		}
		return o, nil
	})
}
