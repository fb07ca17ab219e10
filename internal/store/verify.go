package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
)

// VerifyRow is what a signature re-check needs of a stored attestation.
type VerifyRow struct {
	PDA            string
	AgentID        [32]byte
	ActionType     attestation.ActionType
	ActionHash     [32]byte
	Signature      [64]byte
	Timestamp      time.Time
	Finalized      bool
	SignatureValid bool // as stored at ingest
	// CheckedAtIngest: the signature passed the Ed25519 check at ingest
	// over exactly the bytes stored now (verified_digest still matches
	// sha256 of agent_id, action_hash and agent_signature).
	CheckedAtIngest bool
	// LogIndex is the attestation's leaf index in the transparency log,
	// nil while it has no leaf (not finalized, or waiting for the
	// appender). Read by VerifyRows and EachVerifyRow only.
	LogIndex *int64
}

const verifyColumns = `pda, agent_id, action_type, action_hash, agent_signature, ts, finalized, signature_valid,
	COALESCE(verified_digest = sha256(agent_id || action_hash || agent_signature), false)`

func scanVerifyRow(r pgx.CollectableRow) (VerifyRow, error) {
	return scanVerify(r, false)
}

// scanVerify scans a row of verifyColumns, followed by the log index
// when withLog.
func scanVerify(r pgx.CollectableRow, withLog bool) (VerifyRow, error) {
	var v VerifyRow
	var id, hash, sig []byte
	var typ int16
	dest := []any{&v.PDA, &id, &typ, &hash, &sig, &v.Timestamp, &v.Finalized, &v.SignatureValid, &v.CheckedAtIngest}
	if withLog {
		dest = append(dest, &v.LogIndex)
	}
	if err := r.Scan(dest...); err != nil {
		return v, err
	}
	if len(id) != 32 || len(hash) != 32 || len(sig) != 64 {
		return v, fmt.Errorf("attestation %s: stored key, hash or signature has the wrong length", v.PDA)
	}
	copy(v.AgentID[:], id)
	copy(v.ActionHash[:], hash)
	copy(v.Signature[:], sig)
	v.ActionType = attestation.ActionType(typ)
	return v, nil
}

// bulkVerifySQL reads many attestations by pda in one statement, with
// their log leaf index (NULL without a leaf), from one snapshot.
const bulkVerifySQL = `SELECT a.pda, a.agent_id, a.action_type, a.action_hash, a.agent_signature, a.ts, a.finalized, a.signature_valid,
	COALESCE(a.verified_digest = sha256(a.agent_id || a.action_hash || a.agent_signature), false), l.idx
	FROM attestations a LEFT JOIN log_leaves l ON l.pda = a.pda WHERE a.pda = ANY($1::text[])`

// VerifyRows reads the attestations with the given pdas in one round trip,
// keyed by pda. Unknown pdas are absent from the map.
func (s *Store) VerifyRows(ctx context.Context, pdas []string) (map[string]VerifyRow, error) {
	out := make(map[string]VerifyRow, len(pdas))
	err := s.EachVerifyRow(ctx, pdas, func(v VerifyRow) { out[v.PDA] = v })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachVerifyRow is VerifyRows calling fn for each row as it arrives (in no
// particular order), so callers can work while the rest is still in flight.
func (s *Store) EachVerifyRow(ctx context.Context, pdas []string, fn func(VerifyRow)) error {
	if len(pdas) == 0 {
		return nil
	}
	_, err := onReader(ctx, s, func(db *pgxpool.Pool) (struct{}, error) {
		ctx, cancel := s.ctx(ctx)
		defer cancel()
		rows, err := db.Query(ctx, bulkVerifySQL, pdas)
		if err != nil {
			return struct{}{}, fmt.Errorf("read attestations to verify: %w", err)
		}
		defer rows.Close()
		emitted := false
		for rows.Next() {
			v, err := scanVerify(rows, true)
			if err != nil {
				return struct{}{}, noRetry{fmt.Errorf("read attestations to verify: %w", err)}
			}
			fn(v)
			emitted = true
		}
		if err := rows.Err(); err != nil {
			err = fmt.Errorf("read attestations to verify: %w", err)
			if emitted { // fn saw rows: running it again would repeat them
				err = noRetry{err}
			}
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return err
}
