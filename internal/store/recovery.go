package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settlements recovered from the chain (migration 0026).

// RecoveryCursor is the newest transaction of account the payments
// recovery checked; ok is false when it never looked.
func (s *Store) RecoveryCursor(ctx context.Context, account string) (signature string, slot uint64, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var sl int64
	err = s.pool.QueryRow(ctx, `SELECT newest_signature, newest_slot FROM payment_recovery WHERE account = $1`, account).Scan(&signature, &sl)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("read payments recovery cursor: %w", err)
	}
	return signature, uint64(sl), true, nil
}

// SaveRecoveryCursor records the newest transaction of account checked.
func (s *Store) SaveRecoveryCursor(ctx context.Context, account, signature string, slot uint64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `INSERT INTO payment_recovery (account, newest_signature, newest_slot) VALUES ($1, $2, $3)
		ON CONFLICT (account) DO UPDATE SET newest_signature = EXCLUDED.newest_signature, newest_slot = EXCLUDED.newest_slot, checked_at = now()
		WHERE payment_recovery.newest_slot <= EXCLUDED.newest_slot`, account, signature, int64(slot)); err != nil {
		return fmt.Errorf("save payments recovery cursor: %w", err)
	}
	return nil
}

// RecoverPayment records a payment settled on chain that the ledger does
// not hold (by its message hash or its transaction): settled at
// settledAt, recovered, with no route, request or answer. It reports
// whether it added the row (false: the ledger held the payment).
func (s *Store) RecoverPayment(ctx context.Context, p Payment, settledAt time.Time) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `INSERT INTO payments (message_hash, tx_signature, network, asset, pay_to, payer, amount, route,
			status, reason, node, created_at, updated_at, settled_at, recovered)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'settled', $8, 'chain', $9, now(), $9, true)
		ON CONFLICT DO NOTHING`, p.MessageHash[:], p.TxSignature, p.Network, p.Asset, p.PayTo, p.Payer, int64(p.Amount),
		"recovered from the chain: the ledger row was lost with a database restored from an older backup", settledAt)
	if err != nil {
		return false, fmt.Errorf("recover payment %s: %w", p.TxSignature, err)
	}
	return tag.RowsAffected() == 1, nil
}

// OldestOpenPayment is how long the oldest payment not settled or
// released yet (pending, or failed awaiting the chain) has waited; 0 when
// there is none.
func (s *Store) OldestOpenPayment(ctx context.Context) (time.Duration, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var secs float64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM payments
		WHERE status IN ('pending', 'failed')`).Scan(&secs); err != nil {
		return 0, fmt.Errorf("oldest open payment: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
