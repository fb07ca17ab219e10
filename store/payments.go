package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Payment statuses (migrations/0005_payments.sql).
const (
	PaymentPending  = "pending"
	PaymentSettled  = "settled"
	PaymentFailed   = "failed"
	PaymentReleased = "released"
)

// ErrPaymentUsed: a payment with this message hash was already accepted
// (and not released): a replay.
var ErrPaymentUsed = errors.New("payment already used")

// Payment is one row of the payments ledger.
type Payment struct {
	ID          int64
	MessageHash [32]byte
	TxSignature string // "" until known
	Network     string
	Asset       string
	PayTo       string
	Payer       string
	Amount      uint64
	Route       string
	Status      string
	Reason      string
	Node        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	SettledAt   *time.Time
}

// ClaimPayment records a verified payment as pending before its answer is
// made. It fails with ErrPaymentUsed when the same message was claimed
// before and not released; a released row is claimed again (its payment
// was never charged). It returns the row id.
func (s *Store) ClaimPayment(ctx context.Context, p Payment) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var sig *string
	if p.TxSignature != "" {
		sig = &p.TxSignature
	}
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO payments (message_hash, tx_signature, network, asset, pay_to, payer, amount, route, status, node)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9)
		ON CONFLICT (message_hash) DO UPDATE SET status = 'pending', reason = '', route = EXCLUDED.route,
			node = EXCLUDED.node, tx_signature = EXCLUDED.tx_signature, updated_at = now()
		WHERE payments.status = 'released'
		RETURNING id`, p.MessageHash[:], sig, p.Network, p.Asset, p.PayTo, p.Payer, int64(p.Amount), p.Route, p.Node).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrPaymentUsed
	}
	// ON CONFLICT resolves only the message hash. The same payment claimed
	// at the same moment by two requests also collides on the transaction
	// signature, whose unique index is not the arbiter: the second insert
	// then fails with unique_violation instead of finding the first row.
	// Either key taken means the payment is in use.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return 0, ErrPaymentUsed
	}
	if err != nil {
		return 0, fmt.Errorf("claim payment: %w", err)
	}
	return id, nil
}

// FinishPayment moves a pending payment to settled, failed or released,
// with the settled transaction's signature when there is one.
func (s *Store) FinishPayment(ctx context.Context, id int64, status, txSignature, reason string) error {
	switch status {
	case PaymentSettled, PaymentFailed, PaymentReleased:
	default:
		return fmt.Errorf("finish payment %d: status %q is not final", id, status)
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var sig *string
	if txSignature != "" {
		sig = &txSignature
	}
	if len(reason) > 500 {
		reason = reason[:500]
	}
	tag, err := s.pool.Exec(ctx, `UPDATE payments SET status = $2, tx_signature = COALESCE($3, tx_signature), reason = $4,
		updated_at = now(), settled_at = CASE WHEN $2 = 'settled' THEN now() ELSE settled_at END
		WHERE id = $1 AND status = 'pending'`, id, status, sig, reason)
	if err != nil {
		return fmt.Errorf("finish payment %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish payment %d: %w (or no longer pending)", id, ErrNotFound)
	}
	return nil
}

// PaymentFilter selects ledger rows, newest first.
type PaymentFilter struct {
	Status string    // "" for all
	Payer  string    // "" for all; else only this payer's (a wallet address)
	Since  time.Time // zero: no bound
	Limit  int       // default 100, at most 10,000
}

// ListPayments reads the ledger, newest first.
func (s *Store) ListPayments(ctx context.Context, f PaymentFilter) ([]Payment, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 10_000)
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, message_hash, COALESCE(tx_signature, ''), network, asset, pay_to, payer, amount,
			route, status, reason, node, created_at, updated_at, settled_at
		FROM payments WHERE ($1 = '' OR status = $1) AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($4 = '' OR payer = $4)
		ORDER BY created_at DESC, id DESC LIMIT $3`, f.Status, nullTime(f.Since), f.Limit, f.Payer)
	if err != nil {
		return nil, fmt.Errorf("list payments: %w", err)
	}
	defer rows.Close()
	var out []Payment
	for rows.Next() {
		var p Payment
		var hash []byte
		var amount int64
		if err := rows.Scan(&p.ID, &hash, &p.TxSignature, &p.Network, &p.Asset, &p.PayTo, &p.Payer, &amount, &p.Route,
			&p.Status, &p.Reason, &p.Node, &p.CreatedAt, &p.UpdatedAt, &p.SettledAt); err != nil {
			return nil, fmt.Errorf("list payments: %w", err)
		}
		copy(p.MessageHash[:], hash)
		p.Amount = uint64(amount)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list payments: %w", err)
	}
	return out, nil
}

// PaymentTotals sums the ledger per status (count and atomic amount).
func (s *Store) PaymentTotals(ctx context.Context, since time.Time) (map[string][2]uint64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT status, count(*), COALESCE(sum(amount), 0) FROM payments
		WHERE $1::timestamptz IS NULL OR created_at >= $1 GROUP BY status`, nullTime(since))
	if err != nil {
		return nil, fmt.Errorf("payment totals: %w", err)
	}
	defer rows.Close()
	out := map[string][2]uint64{}
	for rows.Next() {
		var st string
		var n, sum int64
		if err := rows.Scan(&st, &n, &sum); err != nil {
			return nil, fmt.Errorf("payment totals: %w", err)
		}
		out[st] = [2]uint64{uint64(n), uint64(sum)}
	}
	return out, rows.Err()
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
