package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventWebhookTest is the type of the event POST /webhooks/:id/test sends.
const EventWebhookTest = "webhook.test"

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// OutboxEvent is one outbox row: an event as the pipeline carries it.
type OutboxEvent struct {
	ID        int64
	Type      string
	Payload   []byte // JSON, as PostgreSQL renders the stored jsonb
	CreatedAt time.Time
	// Trace is the W3C traceparent of the span that wrote the row ("":
	// none, or a row older than outbox.traceparent). PublishOutbox reads
	// it; the other readers leave it empty.
	Trace string
}

// PublishOutbox hands up to limit outbox rows to publish, oldest first:
// rows not dispatched yet that were never published, or were published
// more than republishAfter ago (their message was lost). The rows are
// locked (other relays skip them) while publish runs, and marked published
// only when it succeeds. It returns how many rows it published.
func (s *Store) PublishOutbox(ctx context.Context, limit int, republishAfter time.Duration, publish func([]OutboxEvent) error) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, event_type, payload, created_at, COALESCE(traceparent, '') FROM outbox
			WHERE dispatched_at IS NULL AND (published_at IS NULL OR published_at < now() - make_interval(secs => $2))
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit, republishAfter.Seconds())
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxEvent, error) {
			var e OutboxEvent
			return e, r.Scan(&e.ID, &e.Type, &e.Payload, &e.CreatedAt, &e.Trace)
		})
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		if len(evs) == 0 {
			return nil
		}
		if err := publish(evs); err != nil {
			return err
		}
		ids := make([]int64, len(evs))
		for i, e := range evs {
			ids[i] = e.ID
		}
		if _, err := tx.Exec(ctx, `UPDATE outbox SET published_at = now() WHERE id = ANY($1)`, ids); err != nil {
			return fmt.Errorf("mark outbox published: %w", err)
		}
		n = len(evs)
		return nil
	})
	return n, err
}

// ListenOutbox calls wake (without blocking) whenever a transaction that
// wrote outbox rows commits, until ctx ends; it holds one connection of
// the pool and reconnects after errors. Relays still poll: a missed
// notification only delays them.
func (s *Store) ListenOutbox(ctx context.Context, wake func()) {
	wait := time.Duration(0)
	for ctx.Err() == nil {
		err := func() error {
			conn, err := s.pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, "LISTEN "+OutboxChannel); err != nil {
				return err
			}
			defer func() {
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				defer cancel()
				_, _ = conn.Exec(uctx, "UNLISTEN "+OutboxChannel)
			}()
			wake() // rows may have been written while not listening
			wait = 0
			for {
				if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
					return err
				}
				wake()
			}
		}()
		if ctx.Err() != nil {
			return
		}
		_ = err
		wait = min(max(2*wait, 100*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// ForgetPublished makes every undispatched outbox row publishable again at
// once: the stream they were published to was lost (Redis restarted
// without its data, or flushed).
func (s *Store) ForgetPublished(ctx context.Context) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE outbox SET published_at = NULL WHERE dispatched_at IS NULL AND published_at IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("forget published outbox rows: %w", err)
	}
	return tag.RowsAffected(), nil
}

// NewDelivery is a delivery FanOut made (or found still untried).
type NewDelivery struct {
	ID        string
	WebhookID string
	OutboxID  int64
}

// FanOut makes the deliveries of the given outbox events to every webhook
// that matches them, and marks the events dispatched, in one transaction.
// A webhook matches an event when it is active (whatever its endpoint
// verification: that only sets which per-host cap its deliveries share),
// subscribes to the event's type, was created no later than the event, and its agent and action-type
// filters (empty: all) admit the event; a test event goes to its target
// webhook only. It is idempotent: an event fanned out before yields the
// same deliveries, and only those never attempted are returned again, so
// a caller that crashed before queueing them queues them now.
func (s *Store) FanOut(ctx context.Context, outboxIDs []int64) ([]NewDelivery, error) {
	if len(outboxIDs) == 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `WITH ev AS (
			SELECT o.id, o.event_type, o.target_webhook, o.created_at, o.chain_key,
				COALESCE(o.payload->>'agentPda', o.payload->>'pda') AS agent, o.payload->>'actionType' AS action_type
			FROM outbox o WHERE o.id = ANY($1)
		), done AS (
			UPDATE outbox SET dispatched_at = now() WHERE id = ANY($1) AND dispatched_at IS NULL
		), cand AS (
			SELECT CASE WHEN ev.chain_key IS NULL THEN 'msg_' || replace(gen_random_uuid()::text, '-', '')
					ELSE `+deliveryIDSQL+` END AS id,
				w.id AS webhook_id, ev.id AS outbox_id
			FROM ev JOIN webhooks w ON CASE WHEN ev.target_webhook IS NOT NULL THEN w.id = ev.target_webhook
				ELSE w.active AND ev.event_type = ANY (w.events) AND w.created_at <= ev.created_at
					AND (cardinality(w.agents) = 0 OR ev.agent = ANY (w.agents))
					AND (cardinality(w.action_types) = 0 OR ev.event_type <> 'attestation.created' OR ev.action_type = ANY (w.action_types))
				END
		)
		INSERT INTO webhook_deliveries (id, webhook_id, outbox_id)
		SELECT id, webhook_id, outbox_id FROM cand
		-- The same chain event made twice for one webhook is one delivery.
		WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = cand.id AND d.outbox_id <> cand.outbox_id)
		ORDER BY outbox_id, webhook_id
		ON CONFLICT (webhook_id, outbox_id) DO UPDATE SET updated_at = now()
			WHERE webhook_deliveries.status = 'pending' AND webhook_deliveries.attempts = 0
		RETURNING id, webhook_id, outbox_id`, outboxIDs)
	if err != nil {
		return nil, fmt.Errorf("fan out %d events: %w", len(outboxIDs), err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (NewDelivery, error) {
		var d NewDelivery
		return d, r.Scan(&d.ID, &d.WebhookID, &d.OutboxID)
	})
	if err != nil {
		return nil, fmt.Errorf("fan out %d events: %w", len(outboxIDs), err)
	}
	return out, nil
}

// InsertTestEvent writes a test event for the account's webhook to the
// outbox, with its delivery, so it travels the pipeline like any event.
// ErrNotFound for another account's webhook or an unknown id.
func (s *Store) InsertTestEvent(ctx context.Context, accountID int64, webhookID string, payload []byte) (NewDelivery, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	d := NewDelivery{WebhookID: webhookID}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM webhooks WHERE id = $1 AND account_id = $2 FOR SHARE`, webhookID, accountID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock webhook: %w", err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO outbox (event_type, payload, target_webhook, traceparent) VALUES ($1, $2, $3, $4) RETURNING id`,
			EventWebhookTest, payload, webhookID, outboxTrace(ctx)).Scan(&d.OutboxID); err != nil {
			return fmt.Errorf("insert test event: %w", err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, outbox_id)
			VALUES ('msg_' || replace(gen_random_uuid()::text, '-', ''), $1, $2) RETURNING id`, webhookID, d.OutboxID).Scan(&d.ID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return d, err
	}
	if err != nil {
		return d, fmt.Errorf("test event for %s: %w", webhookID, err)
	}
	return d, nil
}

// DeliveryJob is what the worker needs to (re)build a delivery's job.
type DeliveryJob struct {
	ID        string
	WebhookID string
	Status    string
	Attempts  int
	// AttemptsBase is the attempts made before the current run.
	AttemptsBase  int
	NextAttemptAt *time.Time
	Event         OutboxEvent
}

const deliveryJobColumns = `d.id, d.webhook_id, d.status, d.attempts, d.attempts_base, d.next_attempt_at, o.id, o.event_type, o.payload, o.created_at`

func scanDeliveryJob(r pgx.Row) (DeliveryJob, error) {
	var j DeliveryJob
	err := r.Scan(&j.ID, &j.WebhookID, &j.Status, &j.Attempts, &j.AttemptsBase, &j.NextAttemptAt, &j.Event.ID, &j.Event.Type, &j.Event.Payload, &j.Event.CreatedAt)
	return j, err
}

// DeliveryOf reads one delivery of the account's webhook with its event;
// ErrNotFound when the webhook is another account's, or the delivery is
// not one of the webhook's.
func (s *Store) DeliveryOf(ctx context.Context, accountID int64, webhookID, deliveryID string) (DeliveryJob, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	j, err := scanDeliveryJob(s.pool.QueryRow(ctx, `SELECT `+deliveryJobColumns+`
		FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.id = $1 AND d.webhook_id = $2 AND w.account_id = $3`, deliveryID, webhookID, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, ErrNotFound
	}
	if err != nil {
		return j, fmt.Errorf("read delivery %s: %w", deliveryID, err)
	}
	return j, nil
}

// DeliveryJobs reads the given deliveries with their events (those that
// still exist), in id order.
func (s *Store) DeliveryJobs(ctx context.Context, ids []string) ([]DeliveryJob, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryJobColumns+`
		FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id WHERE d.id = ANY($1) ORDER BY d.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d deliveries: %w", len(ids), err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryJob, error) { return scanDeliveryJob(r) })
	if err != nil {
		return nil, fmt.Errorf("read %d deliveries: %w", len(ids), err)
	}
	return out, nil
}

// PendingDeliveryIDs lists up to limit pending deliveries after afterID
// (in id order) that did not change since before: the candidates for a
// job lost by the queue.
func (s *Store) PendingDeliveryIDs(ctx context.Context, afterID string, before time.Time, limit int) ([]NewDelivery, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, webhook_id, outbox_id FROM webhook_deliveries
		WHERE status = 'pending' AND id > $1 AND updated_at < $2 ORDER BY id LIMIT $3`, afterID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (NewDelivery, error) {
		var d NewDelivery
		return d, r.Scan(&d.ID, &d.WebhookID, &d.OutboxID)
	})
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", err)
	}
	return out, nil
}

// DeliveryStatus reads a delivery's status; ErrNotFound when it is gone.
func (s *Store) DeliveryStatus(ctx context.Context, id string) (string, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var st string
	err := s.pool.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, id).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("read delivery %s: %w", id, err)
	}
	return st, nil
}

// FailDeliveries ends pending deliveries without an attempt (their webhook
// was deactivated).
func (s *Store) FailDeliveries(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = now()
		WHERE id = ANY($1) AND status = 'pending'`, ids); err != nil {
		return fmt.Errorf("fail %d deliveries: %w", len(ids), err)
	}
	return nil
}

// AttemptRecord is one delivery attempt to record.
type AttemptRecord struct {
	DeliveryID string
	WebhookID  string
	Attempt    int
	Manual     bool // a retry asked for by the owner: it never changes the automatic schedule
	At         time.Time
	Succeeded  bool
	StatusCode int // 0: no response
	Latency    time.Duration
	Error      string
	Response   string // the start of the response body
	// NextAttemptAt is set when a failed automatic attempt will be
	// retried; a failed automatic attempt without it ends the delivery.
	NextAttemptAt *time.Time
	// Gone: the receiver answered 410 Gone; its webhook is deactivated.
	Gone bool
}

// RecordAttempts logs attempts, moves their deliveries on (succeeded,
// failed, or pending until the next attempt), keeps each webhook's failure
// run, and deactivates webhooks whose deliveries all failed for longer
// than disableAfter or whose receiver answered 410, failing their pending
// deliveries. It is one transaction and returns the webhooks deactivated.
func (s *Store) RecordAttempts(ctx context.Context, recs []AttemptRecord, disableAfter time.Duration) ([]string, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	a := newAttemptColumns(recs)
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var disabled []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := a.record(ctx, tx); err != nil {
			return err
		}
		var err error
		disabled, err = a.deactivate(ctx, tx, disableAfter)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record %d attempts: %w", len(recs), err)
	}
	return disabled, nil
}

// attemptColumns are RecordAttempts' records as the columns its
// statements unnest, one row per attempt.
type attemptColumns struct {
	dids, wids, resps       []string
	errp                    []*string
	attempts, latency       []int32
	codes                   []*int32
	manual, ok, gone, final []bool
	at                      []time.Time
	next                    []*time.Time
}

func newAttemptColumns(recs []AttemptRecord) *attemptColumns {
	n := len(recs)
	a := &attemptColumns{
		dids: make([]string, n), wids: make([]string, n), errp: make([]*string, n), resps: make([]string, n),
		attempts: make([]int32, n), latency: make([]int32, n), codes: make([]*int32, n),
		manual: make([]bool, n), ok: make([]bool, n), gone: make([]bool, n), final: make([]bool, n),
		at: make([]time.Time, n), next: make([]*time.Time, n),
	}
	for i, r := range recs {
		a.dids[i], a.wids[i], a.resps[i] = r.DeliveryID, r.WebhookID, r.Response
		a.attempts[i], a.latency[i] = int32(r.Attempt), int32(r.Latency.Milliseconds())
		if r.StatusCode != 0 {
			c := int32(r.StatusCode)
			a.codes[i] = &c
		}
		if r.Error != "" {
			e := r.Error
			a.errp[i] = &e
		}
		a.manual[i], a.ok[i], a.gone[i], a.at[i], a.next[i] = r.Manual, r.Succeeded, r.Gone, r.At.UTC(), r.NextAttemptAt
		a.final[i] = !r.Succeeded && !r.Manual && r.NextAttemptAt == nil
	}
	return a
}

// record logs the attempts (of deliveries that still exist), moves their
// deliveries on and keeps each webhook's failure run.
func (a *attemptColumns) record(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, manual, at, succeeded, status_code,
			latency_ms, error, response, next_attempt_at)
		SELECT a.* FROM unnest($1::text[], $2::text[], $3::int[], $4::bool[], $5::timestamptz[], $6::bool[], $7::int[],
			$8::int[], $9::text[], $10::text[], $11::timestamptz[]) AS a(d, w, n, m, at, ok, code, ms, err, resp, next)
		WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = a.d)`,
		a.dids, a.wids, a.attempts, a.manual, a.at, a.ok, a.codes, a.latency, a.errp, a.resps, a.next); err != nil {
		return fmt.Errorf("insert attempts: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries d SET attempts = d.attempts + 1, updated_at = now(),
			status = CASE WHEN d.status = 'succeeded' OR a.ok THEN 'succeeded' WHEN a.m THEN d.status WHEN a.final THEN 'failed' ELSE 'pending' END,
			next_attempt_at = CASE WHEN a.ok OR a.final THEN NULL WHEN a.m THEN d.next_attempt_at ELSE a.next END
		FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::timestamptz[]) AS a(id, ok, m, final, next)
		WHERE d.id = a.id`, a.dids, a.ok, a.manual, a.final, a.next); err != nil {
		return fmt.Errorf("update deliveries: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE webhooks w SET failing_since = CASE WHEN h.ok THEN NULL ELSE COALESCE(w.failing_since, h.first_fail) END
		FROM (SELECT w AS id, bool_or(ok) AS ok, min(at) FILTER (WHERE NOT ok) AS first_fail
			FROM unnest($1::text[], $2::bool[], $3::timestamptz[]) AS a(w, ok, at) GROUP BY w) h
		WHERE w.id = h.id AND ((h.ok AND w.failing_since IS NOT NULL) OR (NOT h.ok AND w.failing_since IS NULL))`,
		a.wids, a.ok, a.at); err != nil {
		return fmt.Errorf("update webhook failure runs: %w", err)
	}
	return nil
}

// deactivate deactivates the attempts' webhooks whose receiver answered
// 410 or whose deliveries all failed for longer than disableAfter,
// failing their pending deliveries, and returns them.
func (a *attemptColumns) deactivate(ctx context.Context, tx pgx.Tx, disableAfter time.Duration) ([]string, error) {
	var goneIDs []string
	for i, g := range a.gone {
		if g {
			goneIDs = append(goneIDs, a.wids[i])
		}
	}
	rows, err := tx.Query(ctx, `UPDATE webhooks w SET active = false, disabled_at = now(), updated_at = now(),
			disabled_reason = CASE WHEN w.id = ANY($2) THEN 'the receiver answered 410 Gone, asking for no more deliveries'
				ELSE 'every delivery failed since ' || to_char(w.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
					|| ', for longer than ' || $4 END
		WHERE w.id = ANY($1) AND w.active AND (w.id = ANY($2) OR w.failing_since < now() - make_interval(secs => $3))
		RETURNING w.id`, a.wids, goneIDs, disableAfter.Seconds(), disableAfter.String())
	if err != nil {
		return nil, fmt.Errorf("deactivate failing webhooks: %w", err)
	}
	disabled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("deactivate failing webhooks: %w", err)
	}
	if len(disabled) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = now()
			WHERE webhook_id = ANY($1) AND status = 'pending'`, disabled); err != nil {
			return nil, fmt.Errorf("fail deliveries of deactivated webhooks: %w", err)
		}
		if err := disabledEvents(ctx, tx, disabled); err != nil {
			return nil, err
		}
	}
	return disabled, nil
}

// Attempt is one logged attempt, as its owner reads it.
type Attempt struct {
	ID             int64
	DeliveryID     string
	EventID        int64
	EventType      string
	DeliveryStatus string
	Attempt        int
	Manual         bool
	At             time.Time
	Succeeded      bool
	StatusCode     *int32
	LatencyMS      int32
	Error          *string
	Response       string
	NextAttemptAt  *time.Time
}

// ListAttempts returns one page of the account's webhook's attempt log,
// newest first (only deliveryID's attempts when it is not empty; only
// those older than attempt id before when it is above 0: the keyset page
// after a cursor), and how many attempts match in all. ErrNotFound for
// another account's webhook.
func (s *Store) ListAttempts(ctx context.Context, accountID int64, webhookID, deliveryID string, limit, offset int, before int64) ([]Attempt, int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1 AND account_id = $2)`,
		webhookID, accountID).Scan(&exists); err != nil {
		return nil, 0, fmt.Errorf("read webhook %s: %w", webhookID, err)
	}
	if !exists {
		return nil, 0, ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT a.id, a.delivery_id, d.outbox_id, o.event_type, d.status, a.attempt, a.manual, a.at,
			a.succeeded, a.status_code, a.latency_ms, a.error, a.response, a.next_attempt_at
		FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN outbox o ON o.id = d.outbox_id
		WHERE a.webhook_id = $1 AND ($2 = '' OR a.delivery_id = $2) AND ($5 = 0 OR a.id < $5)
		ORDER BY a.id DESC LIMIT $3 OFFSET $4`, webhookID, deliveryID, limit, offset, before)
	if err != nil {
		return nil, 0, fmt.Errorf("list attempts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) {
		var a Attempt
		return a, r.Scan(&a.ID, &a.DeliveryID, &a.EventID, &a.EventType, &a.DeliveryStatus, &a.Attempt, &a.Manual, &a.At,
			&a.Succeeded, &a.StatusCode, &a.LatencyMS, &a.Error, &a.Response, &a.NextAttemptAt)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list attempts: %w", err)
	}
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_attempts WHERE webhook_id = $1 AND ($2 = '' OR delivery_id = $2)`,
		webhookID, deliveryID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count attempts: %w", err)
	}
	return out, total, nil
}

// PruneWebhookLog deletes, in batches of at most batch rows per statement,
// attempts made before cutoff and outbox events created before it that are
// dispatched and have no pending delivery (with their deliveries and
// attempts). It returns how many rows it deleted.
func (s *Store) PruneWebhookLog(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for _, q := range []string{
		`DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE at < $1 ORDER BY id LIMIT $2)`,
		`DELETE FROM webhook_recoveries WHERE id IN (SELECT id FROM webhook_recoveries WHERE state = 'done' AND finished_at < $1 LIMIT $2)`,
		`DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o WHERE o.dispatched_at IS NOT NULL AND o.created_at < $1
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = o.id AND d.status = 'pending')
			ORDER BY o.id LIMIT $2)`,
	} {
		for {
			qctx, cancel := context.WithTimeout(ctx, 4*s.timeout)
			tag, err := s.pool.Exec(qctx, q, cutoff, batch)
			cancel()
			if err != nil {
				return total, fmt.Errorf("prune webhook log: %w", err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) || ctx.Err() != nil {
				break
			}
		}
	}
	return total, nil
}

// OutboxBacklog is how many outbox rows are not dispatched yet and when
// the oldest of them was created (zero when none).
func (s *Store) OutboxBacklog(ctx context.Context) (int64, time.Time, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var n int64
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), (SELECT created_at FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT 1)
		FROM outbox WHERE dispatched_at IS NULL`).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("outbox backlog: %w", err)
	}
	if oldest == nil {
		return n, time.Time{}, nil
	}
	return n, *oldest, nil
}

// disabledEvents writes a webhook.disabled event for each webhook just
// deactivated to every other active webhook of its account
// (each its own outbox row, targeted like a test event), and wakes the
// relays.
func disabledEvents(ctx context.Context, tx pgx.Tx, disabled []string) error {
	tag, err := tx.Exec(ctx, `INSERT INTO outbox (event_type, payload, target_webhook, traceparent)
		SELECT $2, jsonb_build_object('webhookId', d.id, 'url', d.url, 'reason', d.disabled_reason,
				'disabledAt', to_char(d.disabled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')), o.id, $3::text
		FROM webhooks d JOIN webhooks o ON o.account_id = d.account_id AND o.id <> d.id AND o.active
		WHERE d.id = ANY($1) AND NOT d.active
		ORDER BY d.id, o.id`, disabled, EventWebhookDisabled, outboxTrace(ctx))
	if err != nil {
		return fmt.Errorf("webhook.disabled events: %w", err)
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	return nil
}

// deliveryIDSQL derives a chain event's delivery id in FanOut's query, as
// DeliveryID does (w: the webhook, ev: the outbox row).
const deliveryIDSQL = `'msg_' || encode(substr(sha256(convert_to(w.id || chr(10) || ev.event_type || chr(10) || ev.chain_key, 'UTF8')), 1, 16), 'hex')`

// DeliveryID is the id (the webhook-id header) of the delivery of a chain
// event to a webhook: msg_ and the first 16 bytes, in hex, of the SHA-256
// of the webhook's id, the event type and the event's chain key (account,
// transaction, event index, slot), newline-separated. The same event made
// again (a database restored from a backup and refilled from the chain)
// is delivered under the same id, so a receiver that deduplicates on
// webhook-id sees it once.
func DeliveryID(webhookID, eventType, chainKey string) string {
	sum := sha256.Sum256([]byte(webhookID + "\n" + eventType + "\n" + chainKey))
	return "msg_" + hex.EncodeToString(sum[:16])
}
