package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ChainGenesis reads the genesis hash recorded for a checkpoint; ok is
// false when none is (a database never indexed, or indexed before chain
// identity was recorded).
func (s *Store) ChainGenesis(ctx context.Context, checkpoint string) (hash string, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err = s.pool.QueryRow(ctx, `SELECT genesis_hash FROM chain_identity WHERE checkpoint = $1`, checkpoint).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read chain genesis of %s: %w", checkpoint, err)
	}
	return hash, true, nil
}

// RecordChainGenesis records the genesis hash of the chain a checkpoint
// follows, only when none is recorded yet; it returns the hash recorded
// after the call (another one when a different chain was recorded first).
func (s *Store) RecordChainGenesis(ctx context.Context, checkpoint, hash string) (string, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `INSERT INTO chain_identity (checkpoint, genesis_hash) VALUES ($1, $2)
		ON CONFLICT (checkpoint) DO NOTHING`, checkpoint, hash); err != nil {
		return "", fmt.Errorf("record chain genesis of %s: %w", checkpoint, err)
	}
	var got string
	if err := s.pool.QueryRow(ctx, `SELECT genesis_hash FROM chain_identity WHERE checkpoint = $1`, checkpoint).Scan(&got); err != nil {
		return "", fmt.Errorf("read chain genesis of %s: %w", checkpoint, err)
	}
	return got, nil
}

// StartOver forgets how far the named checkpoints came and records hash as
// the chain they follow, in one transaction: the next sync starts from the
// chain's first transaction. Indexed rows are not touched.
func (s *Store) StartOver(ctx context.Context, identity, hash string, checkpoints ...string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE name = ANY($1)`, checkpoints); err != nil {
			return fmt.Errorf("start over: clear checkpoints: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO chain_identity (checkpoint, genesis_hash) VALUES ($1, $2)
			ON CONFLICT (checkpoint) DO UPDATE SET genesis_hash = EXCLUDED.genesis_hash, recorded_at = now()`, identity, hash); err != nil {
			return fmt.Errorf("start over: record genesis: %w", err)
		}
		return nil
	})
}
