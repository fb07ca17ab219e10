package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

const knownTransactionsSQL = `SELECT s FROM unnest($1::text[]) AS v(s) WHERE
	EXISTS (SELECT 1 FROM attestations WHERE tx_signature = s) OR
	EXISTS (SELECT 1 FROM agents WHERE tx_signature = s) OR
	EXISTS (SELECT 1 FROM agent_events WHERE tx_signature = s)`

// KnownTransactions returns which of the given transaction signatures
// stored rows (attestations, agents or agent events).
func (s *Store) KnownTransactions(ctx context.Context, signatures []string) (map[string]bool, error) {
	out := make(map[string]bool, len(signatures))
	if len(signatures) == 0 {
		return out, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, knownTransactionsSQL, signatures)
	if err != nil {
		return nil, fmt.Errorf("look up known transactions: %w", err)
	}
	known, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up known transactions: %w", err)
	}
	for _, k := range known {
		out[k] = true
	}
	return out, nil
}
