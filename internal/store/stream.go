package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
)

// StreamKind is the kind of a stream log row (migration 0017).
type StreamKind int16

// The kinds of stream log rows.
const (
	StreamAttestation StreamKind = 0 // a new attestation; Data is its list item
	StreamCommitment  StreamKind = 1 // it became finalized; Data is its list item, finalized
	StreamRemoved     StreamKind = 2 // a fork removed it; Data is {"pda","txSignature"}
)

// StreamEvent is one row of the stream log: what a live client sees, in
// commit order (Seq is gapless, see migration 0017).
type StreamEvent struct {
	Seq        uint64
	Kind       StreamKind
	PDA        string
	AgentPDA   string
	ActionType attestation.ActionType
	// ActionHash and TxSignature are the attestation's, for the lookup
	// filters (nil and "" on rows written before migration 0021).
	ActionHash  []byte
	TxSignature string
	Timestamp   time.Time
	Slot        uint64
	Data        []byte // JSON: the list item (attestation, commitment), or RemovedData
}

// Cursor is the list cursor of the attestation the row is about.
func (e *StreamEvent) Cursor() Cursor {
	return Cursor{Timestamp: e.Timestamp, Slot: e.Slot, PDA: e.PDA}
}

// RemovedData is the data of a StreamRemoved row.
type RemovedData struct {
	PDA         string `json:"pda"`
	TxSignature string `json:"txSignature"`
}

// appendStream appends evs to the stream log within tx. The counter row
// it locks stays locked until tx ends, so transactions that append commit
// in the order of their numbers.
func appendStream(ctx context.Context, tx pgx.Tx, evs []StreamEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRow(ctx, `UPDATE stream_seq SET n = n + $1 RETURNING n`, len(evs)).Scan(&last); err != nil {
		return fmt.Errorf("number stream events: %w", err)
	}
	n := len(evs)
	cols := struct {
		seq, slot  []int64
		kind, typ  []int16
		pda, agent []string
		ts         []time.Time
		data, hash [][]byte
		tx         []string
	}{}
	for i := range evs {
		e := &evs[i]
		e.Seq = uint64(last - int64(n) + int64(i) + 1)
		cols.seq = append(cols.seq, int64(e.Seq))
		cols.kind = append(cols.kind, int16(e.Kind))
		cols.pda = append(cols.pda, e.PDA)
		cols.agent = append(cols.agent, e.AgentPDA)
		cols.typ = append(cols.typ, int16(e.ActionType))
		cols.ts = append(cols.ts, e.Timestamp.UTC())
		cols.slot = append(cols.slot, int64(e.Slot))
		cols.data = append(cols.data, e.Data)
		cols.hash = append(cols.hash, e.ActionHash)
		cols.tx = append(cols.tx, e.TxSignature)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO stream_events (seq, kind, pda, agent_pda, action_type, ts, slot, data, action_hash, tx_signature)
		SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::text[], $5::smallint[], $6::timestamptz[], $7::bigint[], $8::bytea[],
			$9::bytea[], $10::text[])`,
		cols.seq, cols.kind, cols.pda, cols.agent, cols.typ, cols.ts, cols.slot, cols.data, cols.hash, cols.tx); err != nil {
		return fmt.Errorf("insert stream events: %w", err)
	}
	return nil
}

// sortStream orders a transaction's events as the list does, oldest first.
func sortStream(evs []StreamEvent) {
	slices.SortStableFunc(evs, func(a, b StreamEvent) int {
		return cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.PDA, b.PDA))
	})
}

// StreamFilter selects stream rows (zero fields do not filter).
type StreamFilter struct {
	AgentPDA   string
	ActionType *attestation.ActionType
	// ActionHash (32 bytes) and TxSignature: the list's lookups.
	ActionHash  []byte
	TxSignature string
}

// StreamEvents reads the log rows with after < seq <= upTo that match f,
// oldest first, at most limit, with their data: for a new attestation and
// a finality change, the attestation as the list shows it now (a row whose
// attestation a fork removed since is left out: its removal follows). It
// reads the primary: a position a client holds must never be ahead of
// what it reads. next is the last row read (left-out rows included; after
// when none), full whether limit rows were read (more may follow).
func (s *Store) StreamEvents(ctx context.Context, after, upTo uint64, f StreamFilter, limit int) (evs []StreamEvent, next uint64, full bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	q := `SELECT seq, kind, pda, agent_pda, action_type, ts, slot, data, action_hash, COALESCE(tx_signature, '') FROM stream_events
		WHERE seq > $1 AND seq <= $2`
	args := []any{int64(after), int64(min(upTo, 1<<62))}
	if f.AgentPDA != "" {
		args = append(args, f.AgentPDA)
		q += fmt.Sprintf(" AND agent_pda = $%d", len(args))
	}
	if f.ActionType != nil {
		args = append(args, int16(*f.ActionType))
		q += fmt.Sprintf(" AND action_type = $%d", len(args))
	}
	if f.ActionHash != nil {
		args = append(args, f.ActionHash)
		q += fmt.Sprintf(" AND action_hash = $%d", len(args))
	}
	if f.TxSignature != "" {
		args = append(args, f.TxSignature)
		q += fmt.Sprintf(" AND tx_signature = $%d", len(args))
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY seq LIMIT $%d", len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, after, false, fmt.Errorf("read stream: %w", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StreamEvent, error) {
		var e StreamEvent
		var seq, slot int64
		var kind, typ int16
		err := r.Scan(&seq, &kind, &e.PDA, &e.AgentPDA, &typ, &e.Timestamp, &slot, &e.Data, &e.ActionHash, &e.TxSignature)
		e.Seq, e.Slot, e.Kind, e.ActionType = uint64(seq), uint64(slot), StreamKind(kind), attestation.ActionType(typ)
		return e, err
	})
	if err != nil {
		return nil, after, false, fmt.Errorf("read stream: %w", err)
	}
	if len(all) == 0 {
		return nil, after, false, nil
	}
	next, full = all[len(all)-1].Seq, len(all) == limit
	var pdas []string
	for _, e := range all {
		if e.Kind != StreamRemoved {
			pdas = append(pdas, e.PDA)
		}
	}
	current := map[string]attestation.Attestation{}
	if len(pdas) > 0 {
		rows, err := s.pool.Query(ctx, `SELECT `+attestationColumns+` FROM attestations WHERE pda = ANY($1)`, pdas)
		if err != nil {
			return nil, after, false, fmt.Errorf("read stream attestations: %w", err)
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attestation.Attestation, error) { return scanAttestation(r) })
		if err != nil {
			return nil, after, false, fmt.Errorf("read stream attestations: %w", err)
		}
		for _, a := range list {
			current[a.PDA] = a
		}
	}
	evs = all[:0]
	for _, e := range all {
		if e.Kind != StreamRemoved {
			a, ok := current[e.PDA]
			if !ok || a.Slot != e.Slot {
				continue // removed since (or indexed again in another slot: its own row follows)
			}
			if e.Data, err = json.Marshal(a); err != nil {
				return nil, after, false, fmt.Errorf("encode stream event: %w", err)
			}
		}
		evs = append(evs, e)
	}
	return evs, next, full, nil
}

// StreamHead is the number of the last committed stream row (0: none yet).
func (s *Store) StreamHead(ctx context.Context) (uint64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT n FROM stream_seq`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read stream head: %w", err)
	}
	return uint64(n), nil
}

// StreamPosition finds the stream row of the attestation a list cursor
// names. found is false when the log holds no such row: pruned (too old),
// or never indexed here; known then says whether the attestation itself
// is indexed (the row was pruned).
func (s *Store) StreamPosition(ctx context.Context, c Cursor) (seq uint64, found, known bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var n *int64
	err = s.pool.QueryRow(ctx, `SELECT max(seq) FROM stream_events WHERE pda = $1 AND kind = 0 AND slot = $2`,
		c.PDA, int64(c.Slot)).Scan(&n)
	if err != nil {
		return 0, false, false, fmt.Errorf("find stream position: %w", err)
	}
	if n != nil {
		return uint64(*n), true, true, nil
	}
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM attestations WHERE pda = $1 AND slot = $2)`, c.PDA, int64(c.Slot)).Scan(&known)
	if err != nil {
		return 0, false, false, fmt.Errorf("find stream position: %w", err)
	}
	return 0, false, known, nil
}

// PruneStream deletes up to limit log rows written before cutoff, oldest
// first, and returns how many it deleted.
func (s *Store) PruneStream(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM stream_events WHERE seq IN
		(SELECT seq FROM stream_events WHERE created_at < $1 ORDER BY seq LIMIT $2)`, cutoff.UTC(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune stream: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
