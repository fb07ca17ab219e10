package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PaymentStatus is where a payment of the ledger stands
// (migrations/0005_payments.sql).
type PaymentStatus string

// The payment statuses.
const (
	// PaymentPending: verified and claimed; its answer is being made or
	// its settlement is not known yet.
	PaymentPending PaymentStatus = "pending"
	// PaymentSettled: the transfer landed; the payer was charged.
	PaymentSettled PaymentStatus = "settled"
	// PaymentFailed: the settlement failed, and whether the transfer can
	// still land is not known (the reconciler decides).
	PaymentFailed PaymentStatus = "failed"
	// PaymentReleased: not charged (an error answer, a refused or expired
	// transfer); the same payment may be presented again.
	PaymentReleased PaymentStatus = "released"
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
	Status      PaymentStatus
	Reason      string
	Node        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	SettledAt   *time.Time
	// RequestFingerprint is the SHA-256 of what the payment bought (nil on
	// rows older than migration 0010); Request is the same, readable.
	RequestFingerprint []byte
	Request            string
	PaymentID          string // the x402 payment-identifier, "" when none
	// LastValidHeight is the block height after which the transaction can
	// no longer land (0: unknown).
	LastValidHeight uint64
	// Recovered: recorded from the chain after a restore lost the row
	// (RecoverPayment); its request and kept answer were lost with it.
	Recovered bool
	// Receipt is the signed receipt (compact JWS) of a settled payment, ""
	// when none was issued.
	Receipt string
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
	err := s.pool.QueryRow(ctx, `INSERT INTO payments (message_hash, tx_signature, network, asset, pay_to, payer, amount, route, status, node,
			request_fingerprint, request, payment_id, last_valid_height)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $11, $12, $13)
		ON CONFLICT (message_hash) DO UPDATE SET status = 'pending', reason = '', route = EXCLUDED.route,
			node = EXCLUDED.node, tx_signature = EXCLUDED.tx_signature, request_fingerprint = EXCLUDED.request_fingerprint,
			request = EXCLUDED.request, payment_id = EXCLUDED.payment_id, last_valid_height = EXCLUDED.last_valid_height,
			checked_at = NULL, updated_at = now()
		WHERE payments.status = 'released'
		RETURNING id`, p.MessageHash[:], sig, p.Network, p.Asset, p.PayTo, p.Payer, int64(p.Amount), p.Route, p.Node,
		nilIfEmpty(p.RequestFingerprint), p.Request, nullString(p.PaymentID), nullHeight(p.LastValidHeight)).Scan(&id)
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

// FinishPayment moves a pending (or failed) payment to settled, failed or
// released, with the settled transaction's signature when there is one. A
// row already in the wanted status is left as it is (another node or the
// reconciler got there first); a row in another final status is an error.
func (s *Store) FinishPayment(ctx context.Context, id int64, status PaymentStatus, txSignature, reason string) error {
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
	// A released payment bought nothing: the answer kept for it goes too.
	var n int
	err := s.pool.QueryRow(ctx, `WITH u AS (UPDATE payments SET status = $2, tx_signature = COALESCE($3, tx_signature), reason = $4,
			updated_at = now(), settled_at = CASE WHEN $2 = 'settled' THEN now() ELSE settled_at END
			WHERE id = $1 AND (status = 'pending' OR (status = 'failed' AND $2 <> 'failed')) RETURNING id),
		d AS (DELETE FROM payment_answers WHERE $2 = 'released' AND payment_id IN (SELECT id FROM u))
		SELECT count(*) FROM u`, id, status, sig, reason).Scan(&n)
	if err != nil {
		return fmt.Errorf("finish payment %d: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	var now PaymentStatus
	if err := s.pool.QueryRow(ctx, `SELECT status FROM payments WHERE id = $1`, id).Scan(&now); err != nil {
		return fmt.Errorf("finish payment %d: %w", id, ErrNotFound)
	}
	if now == status {
		return nil
	}
	return fmt.Errorf("finish payment %d: it is %s already, not %s: %w", id, now, status, ErrPaymentUsed)
}

// NotePayment sets a pending payment's reason (what it waits for).
func (s *Store) NotePayment(ctx context.Context, id int64, reason string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if len(reason) > 500 {
		reason = reason[:500]
	}
	if _, err := s.pool.Exec(ctx, `UPDATE payments SET reason = $2, updated_at = now() WHERE id = $1 AND status = 'pending'`, id, reason); err != nil {
		return fmt.Errorf("note payment %d: %w", id, err)
	}
	return nil
}

// paymentColumns are what scanPayment reads.
const paymentColumns = `id, message_hash, COALESCE(tx_signature, ''), network, asset, pay_to, payer, amount,
	route, status, reason, node, created_at, updated_at, settled_at, request_fingerprint, request,
	COALESCE(payment_id, ''), COALESCE(last_valid_height, 0), COALESCE(receipt, ''), recovered`

func scanPayment(row pgx.Row) (Payment, error) {
	var p Payment
	var hash []byte
	var amount, lastValid int64
	if err := row.Scan(&p.ID, &hash, &p.TxSignature, &p.Network, &p.Asset, &p.PayTo, &p.Payer, &amount, &p.Route,
		&p.Status, &p.Reason, &p.Node, &p.CreatedAt, &p.UpdatedAt, &p.SettledAt, &p.RequestFingerprint, &p.Request,
		&p.PaymentID, &lastValid, &p.Receipt, &p.Recovered); err != nil {
		return p, err
	}
	copy(p.MessageHash[:], hash)
	p.Amount, p.LastValidHeight = uint64(amount), uint64(lastValid)
	return p, nil
}

// PaymentByMessage reads the ledger row of a transaction message
// (ErrNotFound: none).
func (s *Store) PaymentByMessage(ctx context.Context, hash [32]byte) (Payment, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE message_hash = $1`, hash[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("payment by message: %w", err)
	}
	return p, nil
}

// PaymentByID reads the ledger row of an x402 payment-identifier
// (ErrNotFound: none).
func (s *Store) PaymentByID(ctx context.Context, paymentID string) (Payment, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE payment_id = $1`, paymentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("payment by id: %w", err)
	}
	return p, nil
}

// PaymentByTransaction reads the ledger row of a settled transaction
// signature (ErrNotFound: none).
func (s *Store) PaymentByTransaction(ctx context.Context, txSignature string) (Payment, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE tx_signature = $1`, txSignature))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("payment by transaction: %w", err)
	}
	return p, nil
}

// SaveReceipt keeps the signed receipt of a settled payment, unless it
// has one already, and returns the one kept: the first receipt issued is
// the payment's receipt for good.
func (s *Store) SaveReceipt(ctx context.Context, id int64, receipt string) (string, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var kept string
	err := s.pool.QueryRow(ctx, `UPDATE payments SET receipt = COALESCE(receipt, $2) WHERE id = $1 AND status = 'settled'
		RETURNING receipt`, id, receipt).Scan(&kept)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("save receipt of payment %d: %w (not settled)", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("save receipt of payment %d: %w", id, err)
	}
	return kept, nil
}

// Verdict is what the chain says of an open payment: a final status
// (settled or released) with its reason, or "" (still open: look again
// later).
type Verdict struct {
	Status PaymentStatus
	Reason string
}

// ReconcilePayments locks up to limit open rows (pending or failed, with a
// transaction signature), least recently checked first, asks decide about
// each and records its verdict, in one transaction. Rows another process
// holds are skipped (FOR UPDATE SKIP LOCKED), so any number of reconcilers
// may run: one acts on a row at a time. It returns the rows decided.
func (s *Store) ReconcilePayments(ctx context.Context, limit int, decide func(context.Context, Payment) Verdict) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile payments: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT `+paymentColumns+` FROM payments
		WHERE status IN ('pending', 'failed') AND tx_signature IS NOT NULL
		ORDER BY checked_at NULLS FIRST, id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
	if err != nil {
		return 0, fmt.Errorf("reconcile payments: %w", err)
	}
	var open []Payment
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("reconcile payments: %w", err)
		}
		open = append(open, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reconcile payments: %w", err)
	}
	decided := 0
	for _, p := range open {
		v := decide(ctx, p)
		switch v.Status {
		case PaymentSettled, PaymentReleased:
			decided++
			if len(v.Reason) > 500 {
				v.Reason = v.Reason[:500]
			}
			_, err = tx.Exec(ctx, `WITH u AS (UPDATE payments SET status = $2, reason = $3, checked_at = now(), updated_at = now(),
					settled_at = CASE WHEN $2 = 'settled' THEN now() ELSE settled_at END WHERE id = $1 RETURNING id)
				DELETE FROM payment_answers WHERE $2 = 'released' AND payment_id IN (SELECT id FROM u)`, p.ID, v.Status, v.Reason)
		default:
			_, err = tx.Exec(ctx, `UPDATE payments SET checked_at = now() WHERE id = $1`, p.ID)
		}
		if err != nil {
			return 0, fmt.Errorf("reconcile payment %d: %w", p.ID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("reconcile payments: %w", err)
	}
	return decided, nil
}

// PaymentFilter selects ledger rows, newest first.
type PaymentFilter struct {
	Status PaymentStatus // "" for all
	Payer  string        // "" for all; else only this payer's (a wallet address)
	Since  time.Time     // zero: no bound
	Limit  int           // default 100, at most 10,000
}

// ListPayments reads the ledger, newest first.
func (s *Store) ListPayments(ctx context.Context, f PaymentFilter) ([]Payment, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 10_000)
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+paymentColumns+`
		FROM payments WHERE ($1 = '' OR status = $1) AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($4 = '' OR payer = $4)
		ORDER BY created_at DESC, id DESC LIMIT $3`, f.Status, nullTime(f.Since), f.Limit, f.Payer)
	if err != nil {
		return nil, fmt.Errorf("list payments: %w", err)
	}
	defer rows.Close()
	var out []Payment
	for rows.Next() {
		p, err := scanPayment(rows)
		if err != nil {
			return nil, fmt.Errorf("list payments: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list payments: %w", err)
	}
	return out, nil
}

// PaymentTotals sums the ledger per status (count and atomic amount).
func (s *Store) PaymentTotals(ctx context.Context, since time.Time) (map[PaymentStatus][2]uint64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT status, count(*), COALESCE(sum(amount), 0) FROM payments
		WHERE $1::timestamptz IS NULL OR created_at >= $1 GROUP BY status`, nullTime(since))
	if err != nil {
		return nil, fmt.Errorf("payment totals: %w", err)
	}
	defer rows.Close()
	out := map[PaymentStatus][2]uint64{}
	for rows.Next() {
		var st PaymentStatus
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

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nullString(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func nullHeight(h uint64) *int64 {
	if h == 0 {
		return nil
	}
	v := int64(h)
	return &v
}
