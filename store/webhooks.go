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
}

// WebhookPatch changes some fields of a webhook; nil fields stay as they are.
// Setting Active to true clears the disabled reason and the failure run.
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Agents      *[]string
	ActionTypes *[]string
	Description *string
	Active      *bool
}

const webhookColumns = `id, account_id, url, events, agents, action_types, description, secret_sealed, secret_key_id,
	active, disabled_reason, disabled_at, failing_since, created_at, updated_at`

func scanWebhook(row pgx.Row) (Webhook, error) {
	var w Webhook
	err := row.Scan(&w.ID, &w.AccountID, &w.URL, &w.Events, &w.Agents, &w.ActionTypes, &w.Description, &w.SecretSealed,
		&w.SecretKeyID, &w.Active, &w.DisabledReason, &w.DisabledAt, &w.FailingSince, &w.CreatedAt, &w.UpdatedAt)
	return w, err
}

// InsertWebhook stores a new webhook (w.ID, the sealed secret and the
// subscription set by the caller). It fails with ErrWebhookLimit when the
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
				secret_sealed, secret_key_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+webhookColumns,
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
// ErrNotFound for another account's webhook or an unknown id.
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
			disabled_reason = CASE WHEN $8 IS NULL THEN disabled_reason WHEN $8 THEN NULL ELSE 'disabled by its owner' END,
			disabled_at = CASE WHEN $8 IS NULL THEN disabled_at WHEN $8 THEN NULL ELSE COALESCE(disabled_at, now()) END,
			failing_since = CASE WHEN $8 THEN NULL ELSE failing_since END,
			updated_at = now()
		WHERE id = $1 AND account_id = $2 RETURNING `+webhookColumns,
		id, accountID, p.URL, events, agents, types, p.Description, p.Active))
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

// SealedSecret is one webhook's sealed secret, for re-sealing under a new key.
type SealedSecret struct {
	WebhookID string
	KeyID     string
	Sealed    []byte
}

// SecretsNotSealedWith lists up to limit secrets sealed with a key other
// than keyID, in id order after afterID.
func (s *Store) SecretsNotSealedWith(ctx context.Context, keyID, afterID string, limit int) ([]SealedSecret, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, secret_key_id, secret_sealed FROM webhooks
		WHERE secret_key_id <> $1 AND id > $2 ORDER BY id LIMIT $3`, keyID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list sealed secrets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SealedSecret, error) {
		var s SealedSecret
		return s, r.Scan(&s.WebhookID, &s.KeyID, &s.Sealed)
	})
	if err != nil {
		return nil, fmt.Errorf("list sealed secrets: %w", err)
	}
	return out, nil
}

// ResealSecret replaces a webhook's sealed secret when it is still the one
// read (old key id), so a concurrent change is never overwritten. It
// reports whether the row changed.
func (s *Store) ResealSecret(ctx context.Context, id, oldKeyID string, sealed []byte, keyID string) (bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE webhooks SET secret_sealed = $3, secret_key_id = $4
		WHERE id = $1 AND secret_key_id = $2`, id, oldKeyID, sealed, keyID)
	if err != nil {
		return false, fmt.Errorf("reseal secret of %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}
