package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrWebhookLimit: the account already has the most webhooks allowed.
var ErrWebhookLimit = errors.New("account has the maximum number of webhooks")

// Webhook is a stored subscription. The secret is only ever held sealed
// here; webhook/keyring opens it.
type Webhook struct {
	ID             string
	AccountID      int64
	URL            string
	Events         []string
	Agents         []string // empty: every agent
	ActionTypes    []string // empty: every action type
	Description    string
	SecretSealed   []byte
	SecretKeyID    string
	Active         bool
	DisabledReason *string
	DisabledAt     *time.Time
	FailingSince   *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Verification is the endpoint verification's state (Verification*:
	// which per-host cap its deliveries share), VerificationAt when it last changed (nil: verified before
	// verification existed), VerifyAttempts the attempts of the current
	// round, VerifyNextAt when the next is due (pending only), VerifyError
	// why the last attempt failed.
	Verification   string
	VerificationAt *time.Time
	VerifyAttempts int
	VerifyNextAt   *time.Time
	VerifyError    *string
	// PreviousSecretSealed is the secret before the last rotation, still
	// signed with until PreviousSecretUntil (nil: none). SignatureScheme
	// is SchemeV1, SchemeV1a or SchemeBoth; Ed25519Sealed the sealed
	// Ed25519 private key (seed) of v1a signatures, PublicKey its whpk_
	// public key. Every sealed value is sealed with SecretKeyID.
	PreviousSecretSealed []byte
	PreviousSecretUntil  *time.Time
	SignatureScheme      string
	Ed25519Sealed        []byte
	PublicKey            *string
	// RateLimit is the subscriber's cap on deliveries per second (nil:
	// the server's).
	RateLimit *int32
}

// Signature schemes of a webhook: which webhook-signature entries its
// deliveries carry.
const (
	SchemeV1   = "v1"   // HMAC-SHA256 with the shared secret
	SchemeV1a  = "v1a"  // Ed25519
	SchemeBoth = "both" // both entries
)

// ErrSecretChanged: the webhook's secrets changed since they were read
// (a concurrent rotation); read it again.
var ErrSecretChanged = errors.New("the webhook's secrets changed meanwhile")

// States of a webhook's endpoint verification. None stops deliveries: a
// pending (a round of webhook.verify requests under way) or unverified
// (the round ended without the right answer) endpoint gets its events
// under the small per-host cap of unverified endpoints; a verified one
// under the verified cap.
const (
	VerificationPending    = "pending"
	VerificationVerified   = "verified"
	VerificationUnverified = "unverified"
)

// WebhookPatch changes some fields of a webhook; nil fields stay as they are.
// Setting Active to true clears the disabled reason and the failure run.
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Agents      *[]string
	ActionTypes *[]string
	Description *string
	Active      *bool
	// SignatureScheme changes the scheme (v1a needs the key: SetSecrets).
	SignatureScheme *string
	// SetRateLimit changes the rate limit to RateLimit (nil: the server's).
	SetRateLimit bool
	RateLimit    *int32
}

const webhookColumns = `id, account_id, url, events, agents, action_types, description, secret_sealed, secret_key_id,
	active, disabled_reason, disabled_at, failing_since, created_at, updated_at,
	verification, verification_at, verify_attempts, verify_next_at, verify_error,
	previous_secret_sealed, previous_secret_until, signature_scheme, ed25519_sealed, public_key, rate_limit_per_second`

func scanWebhook(row pgx.Row) (Webhook, error) {
	var w Webhook
	err := row.Scan(&w.ID, &w.AccountID, &w.URL, &w.Events, &w.Agents, &w.ActionTypes, &w.Description, &w.SecretSealed,
		&w.SecretKeyID, &w.Active, &w.DisabledReason, &w.DisabledAt, &w.FailingSince, &w.CreatedAt, &w.UpdatedAt,
		&w.Verification, &w.VerificationAt, &w.VerifyAttempts, &w.VerifyNextAt, &w.VerifyError,
		&w.PreviousSecretSealed, &w.PreviousSecretUntil, &w.SignatureScheme, &w.Ed25519Sealed, &w.PublicKey, &w.RateLimit)
	return w, err
}

// InsertWebhook stores a new webhook (w.ID, the sealed secret and the
// subscription set by the caller), its verification pending and due now. It fails with ErrWebhookLimit when the
// account already has max webhooks (max <= 0: no limit) and ErrNotFound
// when the account does not exist; the account row is locked for the
// count, so concurrent inserts cannot exceed the limit.
func (s *Store) InsertWebhook(ctx context.Context, w Webhook, max int) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var out Webhook
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM accounts WHERE id = $1 FOR UPDATE`, w.AccountID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock account: %w", err)
		}
		if max > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE account_id = $1`, w.AccountID).Scan(&n); err != nil {
				return fmt.Errorf("count webhooks: %w", err)
			}
			if n >= max {
				return ErrWebhookLimit
			}
		}
		out, err = scanWebhook(tx.QueryRow(ctx, `INSERT INTO webhooks (id, account_id, url, events, agents, action_types, description,
				secret_sealed, secret_key_id, verification, verification_at, verify_next_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', now(), now()) RETURNING `+webhookColumns,
			w.ID, w.AccountID, w.URL, nonNil(w.Events), nonNil(w.Agents), nonNil(w.ActionTypes), w.Description, w.SecretSealed, w.SecretKeyID))
		if err != nil {
			return fmt.Errorf("insert webhook: %w", err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrWebhookLimit) {
		return Webhook{}, err
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("create webhook for account %d: %w", w.AccountID, err)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WebhookOf reads the account's webhook id; another account's webhook is
// ErrNotFound, like an unknown id.
func (s *Store) WebhookOf(ctx context.Context, accountID int64, id string) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND account_id = $2`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("read webhook %s: %w", id, err)
	}
	return w, nil
}

// WebhookByID reads any webhook by id (the delivery worker); ErrNotFound
// when it was deleted.
func (s *Store) WebhookByID(ctx context.Context, id string) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("read webhook %s: %w", id, err)
	}
	return w, nil
}

// ListWebhooks returns one page of the account's webhooks, oldest first,
// and how many the account has.
func (s *Store) ListWebhooks(ctx context.Context, accountID int64, limit, offset int) ([]Webhook, int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE account_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`, accountID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	hooks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Webhook, error) { return scanWebhook(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE account_id = $1`, accountID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count webhooks: %w", err)
	}
	return hooks, total, nil
}

// UpdateWebhook applies p to the account's webhook id and returns it;
// ErrNotFound for another account's webhook or an unknown id. A URL that
// differs from the stored one starts a new verification round (pending,
// due now: restartDue), as RestartVerification does.
func (s *Store) UpdateWebhook(ctx context.Context, accountID int64, id string, p WebhookPatch) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var events, agents, types []string
	if p.Events != nil {
		events = nonNil(*p.Events)
	}
	if p.Agents != nil {
		agents = nonNil(*p.Agents)
	}
	if p.ActionTypes != nil {
		types = nonNil(*p.ActionTypes)
	}
	w, err := scanWebhook(s.pool.QueryRow(ctx, `UPDATE webhooks SET
			url = COALESCE($3, url),
			events = COALESCE($4, events),
			agents = COALESCE($5, agents),
			action_types = COALESCE($6, action_types),
			description = COALESCE($7, description),
			active = COALESCE($8, active),
			signature_scheme = COALESCE($9, signature_scheme),
			rate_limit_per_second = CASE WHEN $10 THEN $11 ELSE rate_limit_per_second END,
			disabled_reason = CASE WHEN $8 IS NULL THEN disabled_reason WHEN $8 THEN NULL ELSE 'disabled by its owner' END,
			disabled_at = CASE WHEN $8 IS NULL THEN disabled_at WHEN $8 THEN NULL ELSE COALESCE(disabled_at, now()) END,
			failing_since = CASE WHEN $8 THEN NULL ELSE failing_since END,
			`+restartIf(`$3::text IS NOT NULL AND $3::text <> url`)+`,
			updated_at = now()
		WHERE id = $1 AND account_id = $2 RETURNING `+webhookColumns,
		id, accountID, p.URL, events, agents, types, p.Description, p.Active, p.SignatureScheme, p.SetRateLimit, p.RateLimit))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("update webhook %s: %w", id, err)
	}
	return w, nil
}

// DeleteWebhook deletes the account's webhook id with its deliveries and
// their log; ErrNotFound for another account's webhook or an unknown id.
func (s *Store) DeleteWebhook(ctx context.Context, accountID int64, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 4*s.timeout) // the log can be long
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND account_id = $2`, id, accountID)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SealedSecret is one webhook's sealed values, for re-sealing under a new
// key: the secret, and the previous secret and the Ed25519 key (nil when
// absent).
type SealedSecret struct {
	WebhookID string
	KeyID     string
	Sealed    []byte
	Previous  []byte
	Ed25519   []byte
}

// SecretsNotSealedWith lists up to limit secrets sealed with a key other
// than keyID, in id order after afterID.
func (s *Store) SecretsNotSealedWith(ctx context.Context, keyID, afterID string, limit int) ([]SealedSecret, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, secret_key_id, secret_sealed, previous_secret_sealed, ed25519_sealed FROM webhooks
		WHERE secret_key_id <> $1 AND id > $2 ORDER BY id LIMIT $3`, keyID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list sealed secrets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SealedSecret, error) {
		var s SealedSecret
		return s, r.Scan(&s.WebhookID, &s.KeyID, &s.Sealed, &s.Previous, &s.Ed25519)
	})
	if err != nil {
		return nil, fmt.Errorf("list sealed secrets: %w", err)
	}
	return out, nil
}

// ResealSecret replaces a webhook's sealed values (r: sealed again, with
// the same absent ones) when they are still the ones read (old key id and
// secret), so a concurrent change is never overwritten. It reports whether
// the row changed.
func (s *Store) ResealSecret(ctx context.Context, old SealedSecret, r SealedSecret) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE webhooks SET secret_sealed = $4, secret_key_id = $5, previous_secret_sealed = $6, ed25519_sealed = $7
		WHERE id = $1 AND secret_key_id = $2 AND secret_sealed = $3`, old.WebhookID, old.KeyID, old.Sealed, r.Sealed, r.KeyID, r.Previous, r.Ed25519)
	if err != nil {
		return false, fmt.Errorf("reseal secret of %s: %w", old.WebhookID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// restartDue is when a new round's first attempt is due: now, but never
// sooner than 10 s after the last round ended (unverified or verified:
// verification_at), and a round restarted while an attempt is scheduled or
// in flight (pending, claimed) keeps that time, brought to at most 10 s
// ahead. Restarts repeated as fast as the API answers (POST /verify, PATCH
// url back and forth) thus send the receiver at most one request per 10 s,
// not one per restart, even when each request is answered at once.
const restartDue = `CASE WHEN verification = 'pending'
				THEN LEAST(GREATEST(now(), verify_next_at), now() + interval '10 seconds')
				ELSE GREATEST(now(), COALESCE(verification_at + interval '10 seconds', now())) END`

// restartIf is the SET list that starts a new verification round when
// cond holds (and leaves the verification as it is otherwise).
func restartIf(cond string) string {
	c := "(" + cond + ")"
	return `verification = CASE WHEN ` + c + ` THEN 'pending' ELSE verification END,
			verification_at = CASE WHEN ` + c + ` THEN now() ELSE verification_at END,
			verify_round = CASE WHEN ` + c + ` THEN verify_round + 1 ELSE verify_round END,
			verify_attempts = CASE WHEN ` + c + ` THEN 0 ELSE verify_attempts END,
			verify_next_at = CASE WHEN ` + c + ` THEN ` + restartDue + ` ELSE verify_next_at END,
			verify_error = CASE WHEN ` + c + ` THEN NULL ELSE verify_error END,
			verify_turn_at = CASE WHEN ` + c + ` THEN NULL ELSE verify_turn_at END`
}

// RestartVerification starts a new verification round of the account's
// webhook id, whatever its state: pending, due now (restartDue), no
// attempts yet. Its deliveries go on, under the unverified endpoints' cap
// until it is verified again. ErrNotFound for another account's webhook or
// an unknown id.
func (s *Store) RestartVerification(ctx context.Context, accountID int64, id string) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	w, err := scanWebhook(s.pool.QueryRow(ctx, `UPDATE webhooks SET `+restartIf("true")+`, updated_at = now()
		WHERE id = $1 AND account_id = $2 RETURNING `+webhookColumns, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("restart verification of %s: %w", id, err)
	}
	return w, nil
}

// VerifyJob is one claimed verification attempt.
type VerifyJob struct {
	WebhookID    string
	URL          string
	SecretSealed []byte
	SecretKeyID  string
	Round        int
	Attempts     int // before this one
	// Turn is the turn at the host's cap the attempt holds (nil: none):
	// it was postponed to it, and is made on it.
	Turn *time.Time
}

// ClaimVerifications takes up to limit due verification attempts: their
// next attempt moves lease ahead, so no other worker takes them meanwhile
// (a worker that stops mid-attempt leaves them due again after lease).
func (s *Store) ClaimVerifications(ctx context.Context, limit int, lease time.Duration) ([]VerifyJob, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `UPDATE webhooks w SET verify_next_at = now() + make_interval(secs => $2)
		FROM (SELECT id FROM webhooks WHERE verification = 'pending' AND verify_next_at <= now()
			ORDER BY verify_next_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
		WHERE w.id = due.id
		RETURNING w.id, w.url, w.secret_sealed, w.secret_key_id, w.verify_round, w.verify_attempts, w.verify_turn_at`, limit, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim verifications: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VerifyJob, error) {
		var j VerifyJob
		return j, r.Scan(&j.WebhookID, &j.URL, &j.SecretSealed, &j.SecretKeyID, &j.Round, &j.Attempts, &j.Turn)
	})
	if err != nil {
		return nil, fmt.Errorf("claim verifications: %w", err)
	}
	return out, nil
}

// VerifyOutcome is what one verification attempt of a round got.
type VerifyOutcome struct {
	WebhookID string
	Round     int
	Verified  bool
	Error     string     // why it failed
	Next      *time.Time // when the next attempt is due; nil with !Verified: the round ends unverified
	Postpone  bool       // no attempt was made (the host's cap): Next is its turn there
}

// RecordVerification stores an attempt's outcome if its round is still
// the webhook's and pending; it reports whether it did.
func (s *Store) RecordVerification(ctx context.Context, o VerifyOutcome) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var q string
	var args []any
	switch {
	case o.Postpone:
		q, args = `UPDATE webhooks SET verify_next_at = $3, verify_turn_at = $3
			WHERE id = $1 AND verify_round = $2 AND verification = 'pending'`,
			[]any{o.WebhookID, o.Round, o.Next}
	case o.Verified:
		q, args = `UPDATE webhooks SET verification = 'verified', verification_at = now(), verify_attempts = verify_attempts + 1,
			verify_next_at = NULL, verify_turn_at = NULL, verify_error = NULL, updated_at = now()
			WHERE id = $1 AND verify_round = $2 AND verification = 'pending'`, []any{o.WebhookID, o.Round}
	default:
		q, args = `UPDATE webhooks SET verification = CASE WHEN $3::timestamptz IS NULL THEN 'unverified' ELSE 'pending' END,
			verification_at = CASE WHEN $3::timestamptz IS NULL THEN now() ELSE verification_at END,
			verify_attempts = verify_attempts + 1, verify_next_at = $3, verify_turn_at = NULL, verify_error = left($4, 400), updated_at = now()
			WHERE id = $1 AND verify_round = $2 AND verification = 'pending'`, []any{o.WebhookID, o.Round, o.Next, o.Error}
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("record verification of %s: %w", o.WebhookID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Secrets is the whole signing material of a webhook, sealed with KeyID:
// what a rotation or a first v1a key writes at once.
type Secrets struct {
	KeyID         string
	Secret        []byte
	Previous      []byte     // nil: none
	PreviousUntil *time.Time // when Previous stops being signed with
	Ed25519       []byte     // nil: none
	PublicKey     *string
}

// SetSecrets replaces the signing material of the account's webhook id
// when its sealed secret is still expectSealed (the one the caller read
// and opened); ErrSecretChanged otherwise, ErrNotFound for another
// account's webhook or an unknown id.
func (s *Store) SetSecrets(ctx context.Context, accountID int64, id string, expectSealed []byte, sec Secrets) (Webhook, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	w, err := scanWebhook(s.pool.QueryRow(ctx, `UPDATE webhooks SET secret_key_id = $4, secret_sealed = $5,
			previous_secret_sealed = $6, previous_secret_until = $7, ed25519_sealed = $8, public_key = $9, updated_at = now()
		WHERE id = $1 AND account_id = $2 AND secret_sealed = $3 RETURNING `+webhookColumns,
		id, accountID, expectSealed, sec.KeyID, sec.Secret, sec.Previous, sec.PreviousUntil, sec.Ed25519, sec.PublicKey))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.WebhookOf(ctx, accountID, id); err != nil {
			return w, err
		}
		return w, ErrSecretChanged
	}
	if err != nil {
		return w, fmt.Errorf("set secrets of %s: %w", id, err)
	}
	return w, nil
}
