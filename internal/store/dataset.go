package store

import (
	"context"
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
)

// The daily dataset (package dataset, docs/dataset.md) reads the log's
// leaves in index order with the attestation each stands for. A day's
// file holds the leaves from the first one of the day up to the first
// leaf stamped on a later day: DatasetDayStart and DatasetDayEnd find
// those bounds, DatasetRows reads what lies between.

// DatasetRow is one leaf of the log and the attestation it stands for.
type DatasetRow struct {
	Index       int64
	Leaf        []byte
	Attestation attestation.Attestation
}

// DatasetDayStart reads the timestamp of the leaf at index idx;
// ErrNotFound when the log holds no such leaf yet.
func (s *Store) DatasetDayStart(ctx context.Context, idx int64) (time.Time, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var ts time.Time
	err := s.pool.QueryRow(ctx, `SELECT a.ts FROM log_leaves l JOIN attestations a ON a.pda = l.pda WHERE l.idx = $1`, idx).Scan(&ts)
	if err == pgx.ErrNoRows {
		return time.Time{}, ErrNotFound
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the leaf at %d: %w", idx, err)
	}
	return ts.UTC(), nil
}

// DatasetDayEnd finds the first leaf at or after index from whose
// attestation is stamped at or after before (the start of the next day):
// the end (exclusive) of the day that starts at from. ok is false when
// the log holds none yet: the day is still open. The scan follows the
// leaves' index, so it reads the day's leaves and one more.
func (s *Store) DatasetDayEnd(ctx context.Context, from int64, before time.Time) (end int64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Minute) // a large day is a long scan
	defer cancel()
	err = s.pool.QueryRow(ctx, `SELECT l.idx FROM log_leaves l JOIN attestations a ON a.pda = l.pda
		WHERE l.idx >= $1 AND a.ts >= $2 ORDER BY l.idx LIMIT 1`, from, before).Scan(&end)
	if err == pgx.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("find the end of the day from leaf %d: %w", from, err)
	}
	return end, true, nil
}

// DatasetRows reads the leaves [from, from+n) in index order, each with
// its attestation (in the API's shape).
func (s *Store) DatasetRows(ctx context.Context, from int64, n int) ([]DatasetRow, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Duration(n)*10*time.Microsecond)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT l.idx, l.leaf, a.pda, a.agent_pda, a.agent_id, a.action_type, a.action_hash,
			a.privacy_mode, a.ts, a.agent_signature, a.tx_signature, a.slot, a.finalized
		FROM log_leaves l JOIN attestations a ON a.pda = l.pda
		WHERE l.idx >= $1 AND l.idx < $2 ORDER BY l.idx`, from, from+int64(n))
	if err != nil {
		return nil, fmt.Errorf("read leaves from %d: %w", from, err)
	}
	defer rows.Close()
	out := make([]DatasetRow, 0, n)
	for rows.Next() {
		var r DatasetRow
		var a attestation.Attestation
		a, err = scanAttestation(leafRow{rows, &r})
		if err != nil {
			return nil, fmt.Errorf("read leaves from %d: %w", from, err)
		}
		r.Attestation = a
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read leaves from %d: %w", from, err)
	}
	return out, nil
}

// leafRow scans a leaf's index and bytes, then the attestation's columns.
type leafRow struct {
	rows pgx.Rows
	r    *DatasetRow
}

func (l leafRow) Scan(dest ...any) error {
	return l.rows.Scan(append([]any{&l.r.Index, &l.r.Leaf}, dest...)...)
}
