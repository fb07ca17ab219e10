package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrAnswerStoreFull: keeping this answer would pass the cap on the bytes
// all kept answers hold.
var ErrAnswerStoreFull = errors.New("the kept answers are at their size cap")

// Answer is what a settled payment bought, as it was sent
// (migrations/0019_payment_answers.sql).
type Answer struct {
	PaymentID int64
	Status    int
	// Headers are the answer's content headers, [name, value], in order.
	Headers [][2]string
	// Body is the body as sent, gzip-compressed unless Encoding is "gzip"
	// (then it is the sent bytes themselves, already gzip).
	Body      []byte
	Encoding  string // "gzip" or ""
	PlainSize int    // the decoded body's length
	Digest    string // hex SHA-256 of the decoded body
	// ResponseHeader and PaymentResponse are the settlement header sent
	// with the answer, "" until the payment settled.
	ResponseHeader  string
	PaymentResponse string
	StoredAt        time.Time
	ExpiresAt       time.Time
}

// KeepAnswer keeps a payment's answer until expiresAt (a payment released
// and claimed again replaces its earlier one). It fails with
// ErrAnswerStoreFull when the kept answers would then hold more than
// capBytes (0: no cap).
func (s *Store) KeepAnswer(ctx context.Context, a Answer, expiresAt time.Time, capBytes int64) error {
	headers, err := json.Marshal(a.Headers)
	if err != nil {
		return fmt.Errorf("keep answer of payment %d: %w", a.PaymentID, err)
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("keep answer of payment %d: %w", a.PaymentID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The usage row is the lock every writer takes first: the pruner,
	// holding it, sets it to the exact sum of what is kept.
	size := int64(len(a.Body))
	var used int64
	// An answer replaced (its payment released, then claimed again) gives
	// its bytes back.
	err = tx.QueryRow(ctx, `WITH old AS (SELECT COALESCE(sum(body_size), 0) AS n FROM payment_answers WHERE payment_id = $3)
		UPDATE payment_answer_usage SET bytes = GREATEST(bytes + $1 - (SELECT n FROM old), 0)
		WHERE id = 1 AND ($2 = 0 OR bytes + $1 - (SELECT n FROM old) <= $2)
		RETURNING bytes`, size, capBytes, a.PaymentID).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrAnswerStoreFull
	}
	if err != nil {
		return fmt.Errorf("keep answer of payment %d: %w", a.PaymentID, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO payment_answers (payment_id, status, headers, body, encoding, body_size, plain_size, digest, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (payment_id) DO UPDATE SET status = EXCLUDED.status, headers = EXCLUDED.headers, body = EXCLUDED.body,
			encoding = EXCLUDED.encoding, body_size = EXCLUDED.body_size, plain_size = EXCLUDED.plain_size, digest = EXCLUDED.digest,
			response_header = NULL, payment_response = NULL, stored_at = now(), expires_at = EXCLUDED.expires_at`,
		a.PaymentID, a.Status, headers, a.Body, a.Encoding, size, a.PlainSize, a.Digest, expiresAt); err != nil {
		return fmt.Errorf("keep answer of payment %d: %w", a.PaymentID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("keep answer of payment %d: %w", a.PaymentID, err)
	}
	return nil
}

// PaymentAnswer reads the answer a payment bought (ErrNotFound: none kept,
// or pruned).
func (s *Store) PaymentAnswer(ctx context.Context, paymentID int64) (Answer, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var a Answer
	var headers []byte
	err := s.pool.QueryRow(ctx, `SELECT payment_id, status, headers, body, encoding, plain_size, digest, COALESCE(response_header, ''),
		COALESCE(payment_response, ''), stored_at, expires_at FROM payment_answers WHERE payment_id = $1`, paymentID).Scan(
		&a.PaymentID, &a.Status, &headers, &a.Body, &a.Encoding, &a.PlainSize, &a.Digest, &a.ResponseHeader, &a.PaymentResponse,
		&a.StoredAt, &a.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("answer of payment %d: %w", paymentID, err)
	}
	if err := json.Unmarshal(headers, &a.Headers); err != nil {
		return a, fmt.Errorf("answer of payment %d: headers: %w", paymentID, err)
	}
	return a, nil
}

// SetAnswerResponse records the settlement header sent with a payment's
// answer, unless one is recorded already, and returns the one kept: the
// first is the one every re-presentation gets (ErrNotFound: no answer).
func (s *Store) SetAnswerResponse(ctx context.Context, paymentID int64, header, value string) (string, string, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var h, v string
	err := s.pool.QueryRow(ctx, `UPDATE payment_answers SET response_header = COALESCE(response_header, $2),
			payment_response = COALESCE(payment_response, $3)
		WHERE payment_id = $1 RETURNING response_header, payment_response`, paymentID, header, value).Scan(&h, &v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("settlement header of payment %d: %w", paymentID, err)
	}
	return h, v, nil
}

// DropAnswer forgets a payment's answer (its payment was released: nothing
// was bought). The usage is corrected by the next PruneAnswers.
func (s *Store) DropAnswer(ctx context.Context, paymentID int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM payment_answers WHERE payment_id = $1`, paymentID); err != nil {
		return fmt.Errorf("drop answer of payment %d: %w", paymentID, err)
	}
	return nil
}

// Pruned is what one PruneAnswers pass did.
type Pruned struct {
	Answers int   // answers deleted (past their expiry)
	Bytes   int64 // their stored bytes
	Kept    int64 // the bytes still kept, exact
}

// PruneAnswers deletes up to limit answers past their expiry (at now) and
// sets the usage to the exact sum of what is kept, under the usage row's
// lock (so any number of nodes may prune at once).
func (s *Store) PruneAnswers(ctx context.Context, now time.Time, limit int) (Pruned, error) {
	var p Pruned
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return p, fmt.Errorf("prune answers: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM payment_answer_usage WHERE id = 1 FOR UPDATE`); err != nil {
		return p, fmt.Errorf("prune answers: %w", err)
	}
	if err := tx.QueryRow(ctx, `WITH gone AS (
			DELETE FROM payment_answers WHERE payment_id IN (
				SELECT payment_id FROM payment_answers WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)
			RETURNING body_size)
		SELECT count(*), COALESCE(sum(body_size), 0) FROM gone`, now, limit).Scan(&p.Answers, &p.Bytes); err != nil {
		return p, fmt.Errorf("prune answers: %w", err)
	}
	if err := tx.QueryRow(ctx, `UPDATE payment_answer_usage SET bytes = (SELECT COALESCE(sum(body_size), 0) FROM payment_answers)
		WHERE id = 1 RETURNING bytes`).Scan(&p.Kept); err != nil {
		return p, fmt.Errorf("prune answers: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return p, fmt.Errorf("prune answers: %w", err)
	}
	return p, nil
}
