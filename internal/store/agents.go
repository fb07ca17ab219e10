package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mr-tron/base58"
)

// AgentCursor is a keyset position in the agents list: the sort key of a
// page's last row (activity_at DESC, pda DESC).
type AgentCursor struct {
	ActivityAt time.Time
	PDA        string
}

// AgentFilter pages the agents list.
type AgentFilter struct {
	// Operator keeps the agent of one operator (its pda is derived from
	// the operator's address: at most one); "": every agent.
	Operator string
	Limit    int
	Offset   int
	After    *AgentCursor
}

// AgentItem is one row of the agents list: what the agent detail says of
// its identity and status, with its attestation count and activity.
type AgentItem struct {
	PDA               string            `json:"pda"`
	Operator          string            `json:"operator"`
	AgentID           string            `json:"agentId"`
	PolicyRoot        string            `json:"policyRoot"`
	RegisteredAt      attestation.Time  `json:"registeredAt"`
	Revoked           bool              `json:"revoked"`
	RevokedAt         *attestation.Time `json:"revokedAt"`
	UpdatedAt         attestation.Time  `json:"updatedAt"`
	AttestationCount  int64             `json:"attestationCount"`
	LastAttestationAt *attestation.Time `json:"lastAttestationAt"`
	LastActivityAt    attestation.Time  `json:"lastActivityAt"`
}

// AgentPage is one page of agents.
type AgentPage struct {
	Items []AgentItem
	Total int64
	Next  *AgentCursor // position of the last item when the page is full
}

// listAgentsSQL is the statement ListAgents runs: the activity index in
// order, each row's count from the maintained counters (one index lookup
// per agent on the page).
func listAgentsSQL(f AgentFilter) (string, []any) {
	var a args
	where := f.where(&a)
	if f.After != nil {
		where += and(where) + "(activity_at, pda) < (" + a.add(f.After.ActivityAt.UTC()) + ", " + a.add(f.After.PDA) + ")"
	}
	return `SELECT pda, operator, agent_id, policy_root, registered_at, revoked, revoked_at, updated_at,
			COALESCE((SELECT sum(n) FROM attestation_counts c WHERE c.agent_pda = agents.pda), 0)::bigint,
			last_attestation_at, activity_at
		FROM agents` + where + ` ORDER BY activity_at DESC, pda DESC LIMIT ` + a.add(f.Limit) + ` OFFSET ` + a.add(f.Offset), a
}

// where is the WHERE clause of f's filters (not its cursor), "" when none.
func (f AgentFilter) where(a *args) string {
	if f.Operator == "" {
		return ""
	}
	return " WHERE operator = " + a.add(f.Operator)
}

// and joins another condition to where.
func and(where string) string {
	if where == "" {
		return " WHERE "
	}
	return " AND "
}

// ListAgents returns one page of agents, the most recently active first
// (activity: the newest of its last attestation, registration, policy
// update and revocation).
func (s *Store) ListAgents(ctx context.Context, f AgentFilter) (AgentPage, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) (AgentPage, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		q, qargs := listAgentsSQL(f)
		rows, err := db.Query(ctx, q, qargs...)
		if err != nil {
			return AgentPage{}, fmt.Errorf("list agents: %w", err)
		}
		var activity []time.Time
		items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AgentItem, error) {
			var it AgentItem
			var agentID, root []byte
			var registered, updated, act time.Time
			var revokedAt, last *time.Time
			err := r.Scan(&it.PDA, &it.Operator, &agentID, &root, &registered, &it.Revoked, &revokedAt, &updated,
				&it.AttestationCount, &last, &act)
			it.AgentID, it.PolicyRoot = base58.Encode(agentID), hex.EncodeToString(root)
			it.RegisteredAt, it.UpdatedAt, it.LastActivityAt = attestation.At(registered), attestation.At(updated), attestation.At(act)
			it.RevokedAt, it.LastAttestationAt = attestation.OptTime(revokedAt), attestation.OptTime(last)
			activity = append(activity, act)
			return it, err
		})
		if err != nil {
			return AgentPage{}, fmt.Errorf("list agents: %w", err)
		}
		p := AgentPage{Items: items}
		var ca args
		if err := db.QueryRow(ctx, `SELECT count(*) FROM agents`+f.where(&ca), ca...).Scan(&p.Total); err != nil {
			return AgentPage{}, fmt.Errorf("count agents: %w", err)
		}
		if f.Limit > 0 && len(items) == f.Limit {
			p.Next = &AgentCursor{ActivityAt: activity[len(activity)-1], PDA: items[len(items)-1].PDA}
		}
		return p, nil
	})
}

// Activity buckets.
const (
	BucketHour = "hour"
	BucketDay  = "day"
)

// ActivityPoint is one bucket of an activity series.
type ActivityPoint struct {
	At     attestation.Time `json:"at"`
	Total  int64            `json:"total"`
	ByType ByType           `json:"byType"`
}

// Activity is the count of attestations per bucket over [From, To), from
// the hourly counters: every bucket, empty ones included, oldest first.
type Activity struct {
	AgentPDA *string          `json:"agentPda"`
	Bucket   string           `json:"bucket"`
	From     attestation.Time `json:"from"`
	To       attestation.Time `json:"to"`
	Series   []ActivityPoint  `json:"series"`
}

// activitySQL reads the counter rows of agent ("": all agents), per type
// and all types, in [from, to): attestation_hours by hour, attestation_days
// by day; a range scan of the counters' key per type.
func activitySQL(agent string, from, to time.Time, bucket string) (string, []any) {
	var a args
	table, col := "attestation_hours", "hour"
	if bucket == BucketDay {
		table, col = "attestation_days", "day"
	}
	return `SELECT action_type, ` + col + `, n FROM ` + table + ` WHERE agent_pda = ` + a.add(agent) +
		` AND action_type = ANY('{-1,0,1,2,3,4,5,6}'::smallint[]) AND ` + col + ` >= ` + a.add(from.UTC()) + ` AND ` + col + ` < ` + a.add(to.UTC()), a
}

// FirstActivity is the first hour with an attestation of agent ("": any
// agent); ok is false when there is none.
func (s *Store) FirstActivity(ctx context.Context, agent string) (time.Time, bool, error) {
	type first struct {
		t  *time.Time
		ok bool
	}
	f, err := onReader(ctx, s, func(db *pgxpool.Pool) (first, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		var t *time.Time
		err := db.QueryRow(ctx, firstActivitySQL, agent).Scan(&t)
		return first{t, t != nil}, err
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("first activity: %w", err)
	}
	if !f.ok {
		return time.Time{}, false, nil
	}
	return f.t.UTC(), true, nil
}

const firstActivitySQL = `SELECT min(hour) FROM attestation_hours WHERE agent_pda = $1 AND action_type = -1`

// GetActivity counts agent's attestations ("": every agent's) per bucket
// (BucketHour or BucketDay, UTC) over [from, to); from and to must lie on
// bucket bounds. ErrNotFound when agent is not "" and no such agent is
// registered.
func (s *Store) GetActivity(ctx context.Context, agent string, bucket string, from, to time.Time) (Activity, error) {
	step := time.Hour
	if bucket == BucketDay {
		step = 24 * time.Hour
	}
	from, to = from.UTC(), to.UTC()
	out := Activity{Bucket: bucket, From: attestation.At(from), To: attestation.At(to)}
	if agent != "" {
		out.AgentPDA = &agent
	}
	n := int(to.Sub(from) / step)
	out.Series = make([]ActivityPoint, n)
	for i := range out.Series {
		out.Series[i] = ActivityPoint{At: attestation.At(from.Add(time.Duration(i) * step)), ByType: NewByType()}
	}
	type row struct {
		typ  int16
		hour time.Time
		n    int64
	}
	rows, err := onReader(ctx, s, func(db *pgxpool.Pool) ([]row, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		if agent != "" {
			var exists bool
			if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE pda = $1)`, agent).Scan(&exists); err != nil {
				return nil, fmt.Errorf("read agent: %w", err)
			}
			if !exists {
				return nil, ErrNotFound
			}
		}
		q, args := activitySQL(agent, from, to, bucket)
		rs, err := db.Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read activity: %w", err)
		}
		return pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.typ, &x.hour, &x.n)
			return x, err
		})
	})
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		i := int(r.hour.UTC().Sub(from) / step)
		if i < 0 || i >= n {
			continue
		}
		p := &out.Series[i]
		if r.typ == allTypes {
			p.Total += r.n
		} else {
			p.ByType[attestation.ActionType(r.typ).String()] += r.n
		}
	}
	return out, nil
}

// Sample is a published sample payload: the payload and its SHA-256.
type Sample struct {
	ActionHash string `json:"actionHash"`
	Payload    string `json:"payload"`
}

// MaxSamplePayload bounds a published sample payload (bytes).
const MaxSamplePayload = 4096

// PublishSamples stores payloads as published samples, each under the
// SHA-256 of its bytes (a payload already published is kept once).
func (s *Store) PublishSamples(ctx context.Context, payloads []string) error {
	if len(payloads) == 0 {
		return nil
	}
	hashes := make([][]byte, len(payloads))
	for i, p := range payloads {
		if len(p) > MaxSamplePayload {
			return fmt.Errorf("publish samples: payload %d is %d bytes, at most %d", i, len(p), MaxSamplePayload)
		}
		h := sha256.Sum256([]byte(p))
		hashes[i] = h[:]
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `INSERT INTO sample_payloads (action_hash, payload)
		SELECT * FROM unnest($1::bytea[], $2::text[]) ON CONFLICT DO NOTHING`, hashes, payloads); err != nil {
		return fmt.Errorf("publish samples: %w", err)
	}
	s.notify(ctx)
	return nil
}

// Samples returns the published sample payloads: the one of hash when hash
// is set (none when there is none), else the newest up to limit.
func (s *Store) Samples(ctx context.Context, hash []byte, limit int) ([]Sample, error) {
	return onReader(ctx, s, func(db *pgxpool.Pool) ([]Sample, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		var rows pgx.Rows
		var err error
		if hash != nil {
			rows, err = db.Query(ctx, `SELECT action_hash, payload FROM sample_payloads WHERE action_hash = $1`, hash)
		} else {
			rows, err = db.Query(ctx, `SELECT action_hash, payload FROM sample_payloads ORDER BY created_at DESC, action_hash LIMIT $1`, limit)
		}
		if err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Sample, error) {
			var h []byte
			var x Sample
			err := r.Scan(&h, &x.Payload)
			x.ActionHash = hex.EncodeToString(h)
			return x, err
		})
		if err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
		if out == nil {
			out = []Sample{}
		}
		return out, nil
	})
}
