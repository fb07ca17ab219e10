package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventWebhookDisabled is the operational event sent to an account's other
// webhooks when the service deactivates one.
const EventWebhookDisabled = "webhook.disabled"

// Recovery states.
const (
	RecoveryRunning = "running"
	RecoveryDone    = "done"
)

// Recovery is a request to send again a webhook's deliveries of a window:
// those that failed (OnlyFailed), or those that failed or succeeded.
// Total is how many matched when it was asked for (and are marked as its
// own), Queued how many were queued again so far, Skipped how many of the
// marked ones were not sent after all (acknowledged meanwhile by a manual
// retry under OnlyFailed, pruned, or the webhook was deactivated). Once
// done, Queued + Skipped = Total.
type Recovery struct {
	ID         string
	WebhookID  string
	Since      time.Time
	Until      time.Time
	OnlyFailed bool
	OpenEnded  bool // asked without an end: Until is when it was asked
	State      string
	Total      int64
	Queued     int64
	Skipped    int64
	CreatedAt  time.Time
	FinishedAt *time.Time
}

const recoveryColumns = `id, webhook_id, since, until, only_failed, open_ended, state, total, queued, skipped, created_at, finished_at`

func scanRecovery(r pgx.Row) (Recovery, error) {
	var x Recovery
	err := r.Scan(&x.ID, &x.WebhookID, &x.Since, &x.Until, &x.OnlyFailed, &x.OpenEnded, &x.State, &x.Total, &x.Queued,
		&x.Skipped, &x.CreatedAt, &x.FinishedAt)
	return x, err
}

// ErrWebhookInactive: the webhook is inactive.
var ErrWebhookInactive = errors.New("the webhook is inactive")

// MaxRunningRecoveries bounds the recoveries of other windows that run at
// once for one webhook: windows shifted by a second would otherwise each
// start one and send the same deliveries again.
const MaxRunningRecoveries = 4

// ErrTooManyRecoveries: MaxRunningRecoveries other windows run already.
var ErrTooManyRecoveries = errors.New("too many recoveries of this webhook are running")

// recoverable is the condition on a delivery d that a recovery takes:
// failed, or also succeeded when $onlyFailed is false (pending ones are
// being delivered already).
func recoverable(onlyFailed string) string {
	return `(d.status = 'failed' OR (NOT ` + onlyFailed + ` AND d.status = 'succeeded'))`
}

// StartRecovery records a recovery of the account's webhook r.WebhookID
// (r.ID, the window and OnlyFailed set by the caller) and marks the
// deliveries it will queue again: those created in [Since, Until) that are
// recoverable now and not marked by another running recovery (each is sent
// by one recovery at a time). Total is how many it marked, so the count it
// answers is the count it sends (RecoverBatch takes the marked ones only,
// however the others change meanwhile). It reports true; while a recovery
// of the same window runs, it returns that one and false. ErrNotFound for
// another account's webhook or an unknown id, ErrWebhookInactive for an
// inactive one.
func (s *Store) StartRecovery(ctx context.Context, accountID int64, r Recovery) (Recovery, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*s.timeout) // marking can be long
	defer cancel()
	var out Recovery
	started := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var active bool
		// FOR UPDATE: starts on one webhook take turns, so the running
		// count below is exact and two starts never mark the same rows.
		err := tx.QueryRow(ctx, `SELECT active FROM webhooks WHERE id = $1 AND account_id = $2 FOR UPDATE`,
			r.WebhookID, accountID).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock webhook: %w", err)
		}
		if !active {
			return ErrWebhookInactive
		}
		var running int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_recoveries WHERE webhook_id = $1 AND state = 'running'
			AND NOT (since = $2 AND only_failed = $3
				AND (CASE WHEN open_ended THEN 'infinity'::timestamptz ELSE until END) = (CASE WHEN $4 THEN 'infinity'::timestamptz ELSE $5 END))`,
			r.WebhookID, r.Since, r.OnlyFailed, r.OpenEnded, r.Until).Scan(&running); err != nil {
			return fmt.Errorf("count running recoveries: %w", err)
		}
		if running >= MaxRunningRecoveries {
			return ErrTooManyRecoveries
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhook_recoveries (id, webhook_id, since, until, only_failed, open_ended, total)
			VALUES ($1, $2, $3, $4, $5, $6, 0) ON CONFLICT DO NOTHING`,
			r.ID, r.WebhookID, r.Since, r.Until, r.OnlyFailed, r.OpenEnded)
		if err != nil {
			return fmt.Errorf("insert recovery: %w", err)
		}
		out, err = scanRecovery(tx.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM webhook_recoveries WHERE id = $1`, r.ID))
		if err == nil {
			started = true
			// Mark in id order (the order every writer of many deliveries
			// locks them in), then count what was marked.
			tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET recovery_id = $5
				WHERE id IN (SELECT d.id FROM webhook_deliveries d
					WHERE d.webhook_id = $1 AND d.created_at >= $2 AND d.created_at < $3 AND `+recoverable("$4")+`
						AND (d.recovery_id IS NULL OR NOT EXISTS (SELECT 1 FROM webhook_recoveries o
							WHERE o.id = d.recovery_id AND o.state = 'running'))
					ORDER BY d.id FOR UPDATE)`, r.WebhookID, r.Since, r.Until, r.OnlyFailed, r.ID)
			if err != nil {
				return fmt.Errorf("mark deliveries: %w", err)
			}
			out, err = scanRecovery(tx.QueryRow(ctx, `UPDATE webhook_recoveries SET total = $2::bigint,
					state = CASE WHEN $2::bigint = 0 THEN 'done' ELSE state END, finished_at = CASE WHEN $2::bigint = 0 THEN now() END
				WHERE id = $1 RETURNING `+recoveryColumns, r.ID, tag.RowsAffected()))
			if err != nil {
				return fmt.Errorf("count marked deliveries: %w", err)
			}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the new recovery: %w", err)
		}
		// The same window runs already.
		out, err = scanRecovery(tx.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM webhook_recoveries
			WHERE webhook_id = $1 AND since = $2 AND only_failed = $3 AND state = 'running'
				AND (CASE WHEN open_ended THEN 'infinity'::timestamptz ELSE until END) = (CASE WHEN $4 THEN 'infinity'::timestamptz ELSE $5 END)`,
			r.WebhookID, r.Since, r.OnlyFailed, r.OpenEnded, r.Until))
		if err != nil {
			return fmt.Errorf("read the running recovery: %w", err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrWebhookInactive) || errors.Is(err, ErrTooManyRecoveries) {
		return out, false, err
	}
	if err != nil {
		return out, false, fmt.Errorf("recovery of %s: %w", r.WebhookID, err)
	}
	return out, started, nil
}

// RecoveryOf reads one recovery of the account's webhook; ErrNotFound
// when it is not one of that webhook's or the webhook is another
// account's.
func (s *Store) RecoveryOf(ctx context.Context, accountID int64, webhookID, id string) (Recovery, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := scanRecovery(s.pool.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM webhook_recoveries
		WHERE id = $1 AND webhook_id = $2 AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = $2 AND w.account_id = $3)`,
		id, webhookID, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("read recovery %s: %w", id, err)
	}
	return r, nil
}

// ClaimRecovery takes one running recovery no worker holds (or whose
// holder's lease ran out) for lease; ok false when there is none.
func (s *Store) ClaimRecovery(ctx context.Context, lease time.Duration) (Recovery, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := scanRecovery(s.pool.QueryRow(ctx, `UPDATE webhook_recoveries SET lease_until = now() + make_interval(secs => $1)
		WHERE id = (SELECT id FROM webhook_recoveries WHERE state = 'running' AND (lease_until IS NULL OR lease_until < now())
			ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+recoveryColumns, lease.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("claim a recovery: %w", err)
	}
	return r, true, nil
}

// RecoverBatch takes the next up to limit deliveries a running recovery
// marked, in (created_at, id) order, and makes those still recoverable
// pending again as a new run (attempts_base = attempts, due now), in one
// transaction that also clears their marks, counts them as queued (and the
// others as skipped), extends the lease, and ends the recovery when no
// mark is left. The caller queues the returned jobs; if it dies first, the
// reconciliation of pending deliveries queues them. done reports that the
// recovery is over (or gone).
func (s *Store) RecoverBatch(ctx context.Context, id string, limit int, lease time.Duration) (jobs []DeliveryJob, done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*s.timeout)
	defer cancel()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var r Recovery
		var active bool
		err := tx.QueryRow(ctx, `SELECT r.webhook_id, r.only_failed, w.active
			FROM webhook_recoveries r JOIN webhooks w ON w.id = r.webhook_id
			WHERE r.id = $1 AND r.state = 'running' FOR UPDATE OF r`, id).Scan(&r.WebhookID, &r.OnlyFailed, &active)
		if errors.Is(err, pgx.ErrNoRows) {
			done = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock recovery: %w", err)
		}
		if !active { // deactivated meanwhile: what is left is not sent
			done = true
			return finishRecovery(ctx, tx, id)
		}
		rows, err := tx.Query(ctx, `SELECT d.id, d.created_at FROM webhook_deliveries d WHERE d.recovery_id = $1
			ORDER BY d.created_at, d.id LIMIT $2 FOR UPDATE`, id, limit)
		if err != nil {
			return fmt.Errorf("pick deliveries: %w", err)
		}
		ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var did string
			var at time.Time
			return did, r.Scan(&did, &at)
		})
		if err != nil {
			return fmt.Errorf("pick deliveries: %w", err)
		}
		if len(ids) > 0 {
			rows, err = tx.Query(ctx, `WITH up AS (
					UPDATE webhook_deliveries d SET status = 'pending', attempts_base = d.attempts, next_attempt_at = NULL,
						recovery_id = NULL, updated_at = now()
					WHERE d.id = ANY($1) AND `+recoverable("$2")+`
					RETURNING d.id, d.webhook_id, d.status, d.attempts, d.attempts_base, d.next_attempt_at, d.outbox_id)
				SELECT up.id, up.webhook_id, up.status, up.attempts, up.attempts_base, up.next_attempt_at, o.id, o.event_type, o.payload, o.created_at
				FROM up JOIN outbox o ON o.id = up.outbox_id ORDER BY up.id`, ids, r.OnlyFailed)
			if err != nil {
				return fmt.Errorf("recover deliveries: %w", err)
			}
			if jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryJob, error) { return scanDeliveryJob(r) }); err != nil {
				return fmt.Errorf("recover deliveries: %w", err)
			}
			// The rest are no longer recoverable (a manual retry succeeded
			// under only-failed): skipped.
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET recovery_id = NULL WHERE id = ANY($1) AND recovery_id = $2`,
				ids, id); err != nil {
				return fmt.Errorf("clear skipped deliveries: %w", err)
			}
		}
		done = len(ids) < limit
		_, err = tx.Exec(ctx, `UPDATE webhook_recoveries SET queued = queued + $2, skipped = skipped + $3,
				lease_until = now() + make_interval(secs => $4)
			WHERE id = $1`, id, len(jobs), len(ids)-len(jobs), lease.Seconds())
		if err != nil {
			return fmt.Errorf("count the recovery's progress: %w", err)
		}
		if done {
			return finishRecovery(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("recovery %s: %w", id, err)
	}
	return jobs, done, nil
}

// finishRecovery ends recovery id: the marks left are cleared (those
// deliveries are not sent) and whatever was not queued counts as skipped,
// so queued + skipped = total.
func finishRecovery(ctx context.Context, tx pgx.Tx, id string) error {
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET recovery_id = NULL WHERE recovery_id = $1`, id); err != nil {
		return fmt.Errorf("clear the recovery's marks: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_recoveries SET state = 'done', finished_at = now(), skipped = GREATEST(total - queued, 0)
		WHERE id = $1`, id); err != nil {
		return fmt.Errorf("finish the recovery: %w", err)
	}
	return nil
}

// ReleaseRecovery lets go of a recovery's lease (the worker stops).
func (s *Store) ReleaseRecovery(ctx context.Context, id string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_recoveries SET lease_until = NULL WHERE id = $1`, id); err != nil {
		return fmt.Errorf("release recovery %s: %w", id, err)
	}
	return nil
}

// DeliveryStatuses reads the statuses of many deliveries in one query (a
// worker checks a batch of recovered deliveries and retries at once, not
// one query per send); a delivery that is gone is absent from the map.
func (s *Store) DeliveryStatuses(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	// Only what can be a delivery id (msg_ and 32 hexadecimal digits, as
	// the table's check says) is asked for: any other text (a NUL byte
	// would fail the whole query) cannot be one.
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if deliveryID(id) {
			valid = append(valid, id)
		}
	}
	ids = valid
	if len(ids) == 0 {
		return out, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, status FROM webhook_deliveries WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d delivery statuses: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, fmt.Errorf("read %d delivery statuses: %w", len(ids), err)
		}
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %d delivery statuses: %w", len(ids), err)
	}
	return out, nil
}

// deliveryID reports whether id has a delivery id's shape.
func deliveryID(id string) bool {
	if len(id) != 36 || !strings.HasPrefix(id, "msg_") {
		return false
	}
	for i := 4; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
