package store

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestDeliveryStatuses: many deliveries' statuses in one query; a gone or
// unknown id (whatever its text) is absent, never an error.
func TestDeliveryStatuses(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	acc, _, err := st.EnsureAccount(ctx, "statuses")
	testenv.Must(t, err, "account")
	_, err = st.InsertWebhook(ctx, Webhook{ID: "wh_000000000000000000000001", AccountID: acc.ID, URL: "https://example.com/hook",
		Events: []string{EventAttestationCreated}, SecretSealed: []byte("sealed"), SecretKeyID: "k1"}, 0)
	testenv.Must(t, err, "webhook")
	_, err = st.Pool().Exec(ctx, `WITH ev AS (
			INSERT INTO outbox (event_type, payload) SELECT 'attestation.created', '{}'::jsonb FROM generate_series(1, 3) RETURNING id)
		INSERT INTO webhook_deliveries (id, webhook_id, outbox_id, status)
		SELECT 'msg_' || lpad(to_hex(row_number() OVER ()), 32, '0'), 'wh_000000000000000000000001', ev.id,
			(ARRAY['pending', 'succeeded', 'failed'])[row_number() OVER ()]
		FROM ev`)
	testenv.Must(t, err, "deliveries")
	id := func(n int) string { return "msg_" + strings.Repeat("0", 31) + string(rune('0'+n)) }
	got, err := st.DeliveryStatuses(ctx, []string{id(1), id(2), id(3), id(9), "", "'; DROP TABLE webhook_deliveries; --",
		strings.Repeat("x", 10_000), "msg_\x00", "msg_" + strings.Repeat("0", 31) + "\x00", "MSG_" + strings.Repeat("0", 31) + "1", "msg_" + strings.Repeat("0", 31) + "G"})
	testenv.Must(t, err, "statuses")
	want := map[string]string{id(1): DeliveryPending, id(2): "succeeded", id(3): "failed"}
	if len(got) != len(want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if got, err := st.DeliveryStatuses(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v %v", got, err)
	}
}

// TestRecoveryMarksWhatItSends: a recovery sends exactly the deliveries it
// counted when it was asked for. Deliveries pending then (being delivered)
// that settle before it runs are not taken; a delivery counted by a running
// recovery is not counted by another (overlapping window) one; one
// acknowledged meanwhile under status failed is skipped, and said so; and
// a deactivated webhook's recovery ends with the rest skipped, no mark
// left behind.
func TestRecoveryMarksWhatItSends(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	acc, _, err := st.EnsureAccount(ctx, "marks")
	testenv.Must(t, err, "account")
	const wh = "wh_0000000000000000000000a1"
	_, err = st.InsertWebhook(ctx, Webhook{ID: wh, AccountID: acc.ID, URL: "https://example.com/hook",
		Events: []string{EventAttestationCreated}, SecretSealed: []byte("sealed"), SecretKeyID: "k1"}, 0)
	testenv.Must(t, err, "webhook")
	// d1..d3 failed, d4..d5 succeeded, d6..d7 pending, created a minute ago.
	_, err = st.Pool().Exec(ctx, `WITH ev AS (
			INSERT INTO outbox (event_type, payload) SELECT 'attestation.created', '{}'::jsonb FROM generate_series(1, 7) RETURNING id)
		INSERT INTO webhook_deliveries (id, webhook_id, outbox_id, status, attempts, created_at)
		SELECT 'msg_' || lpad(to_hex(row_number() OVER ()), 32, '0'), $1, ev.id,
			(ARRAY['failed', 'failed', 'failed', 'succeeded', 'succeeded', 'pending', 'pending'])[row_number() OVER ()], 1,
			now() - interval '1 minute'
		FROM ev`, wh)
	testenv.Must(t, err, "deliveries")
	d := func(n int) string { return "msg_" + strings.Repeat("0", 31) + string(rune('0'+n)) }
	setStatus := func(status string, ns ...int) {
		t.Helper()
		ids := make([]string, len(ns))
		for i, n := range ns {
			ids[i] = d(n)
		}
		_, err := st.Pool().Exec(ctx, `UPDATE webhook_deliveries SET status = $2 WHERE id = ANY($1)`, ids, status)
		testenv.Must(t, err, "set status")
	}
	now := time.Now().UTC()
	start := func(id string, since time.Duration, onlyFailed bool) Recovery {
		t.Helper()
		r, started, err := st.StartRecovery(ctx, acc.ID, Recovery{ID: id, WebhookID: wh, Since: now.Add(-since), Until: now, OnlyFailed: onlyFailed})
		testenv.Must(t, err, "start %s", id)
		if !started {
			t.Fatalf("%s not started", id)
		}
		return r
	}
	drain := func(id string) []string {
		t.Helper()
		var sent []string
		for range 10 {
			jobs, done, err := st.RecoverBatch(ctx, id, 2, time.Minute)
			testenv.Must(t, err, "batch of %s", id)
			for _, j := range jobs {
				sent = append(sent, j.ID)
			}
			if done {
				sort.Strings(sent)
				return sent
			}
		}
		t.Fatalf("%s not done after 10 batches", id)
		return nil
	}
	get := func(id string) Recovery {
		t.Helper()
		r, err := st.RecoveryOf(ctx, acc.ID, wh, id)
		testenv.Must(t, err, "read %s", id)
		return r
	}
	marks := func() int {
		t.Helper()
		var n int
		testenv.Must(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE recovery_id IS NOT NULL`).Scan(&n), "marks")
		return n
	}

	r1 := start("rcv_000000000000000000000001", time.Hour, false) // status all: d1..d5
	if r1.Total != 5 {
		t.Fatalf("status all counted %d, want 5 (the pending ones are under way)", r1.Total)
	}
	setStatus("succeeded", 6, 7)                                    // the pending ones settle before the recovery runs
	r2 := start("rcv_000000000000000000000002", 2*time.Hour, false) // overlapping: only what r1 did not take
	if r2.Total != 2 {
		t.Fatalf("the overlapping recovery counted %d, want 2 (d6, d7: r1 sends the others)", r2.Total)
	}
	if sent := drain(r1.ID); strings.Join(sent, ",") != strings.Join([]string{d(1), d(2), d(3), d(4), d(5)}, ",") {
		t.Fatalf("r1 sent %v", sent)
	}
	if r := get(r1.ID); r.State != RecoveryDone || r.Queued != 5 || r.Skipped != 0 || r.Total != 5 {
		t.Fatalf("r1 ended %+v", r)
	}
	if sent := drain(r2.ID); strings.Join(sent, ",") != d(6)+","+d(7) {
		t.Fatalf("r2 sent %v", sent)
	}

	// Only failed: d1, d2 failed again; d2 is acknowledged by a manual
	// retry before the recovery runs: skipped, and said so.
	setStatus("failed", 1, 2)
	setStatus("succeeded", 3, 4, 5, 6, 7)
	r3 := start("rcv_000000000000000000000003", time.Hour, true)
	if r3.Total != 2 {
		t.Fatalf("status failed counted %d, want 2", r3.Total)
	}
	setStatus("succeeded", 2)
	if sent := drain(r3.ID); strings.Join(sent, ",") != d(1) {
		t.Fatalf("r3 sent %v", sent)
	}
	if r := get(r3.ID); r.State != RecoveryDone || r.Queued != 1 || r.Skipped != 1 || r.Total != 2 {
		t.Fatalf("r3 ended %+v", r)
	}

	// Deactivated meanwhile: nothing is sent, the rest is skipped, no mark stays.
	setStatus("failed", 1, 2, 3)
	r4 := start("rcv_000000000000000000000004", time.Hour, true)
	if r4.Total != 3 || marks() != 3 {
		t.Fatalf("r4 counted %d (%d marks)", r4.Total, marks())
	}
	_, err = st.Pool().Exec(ctx, `UPDATE webhooks SET active = false WHERE id = $1`, wh)
	testenv.Must(t, err, "deactivate")
	if sent := drain(r4.ID); len(sent) != 0 {
		t.Fatalf("r4 sent %v for an inactive webhook", sent)
	}
	if r := get(r4.ID); r.State != RecoveryDone || r.Queued != 0 || r.Skipped != 3 || marks() != 0 {
		t.Fatalf("r4 ended %+v, %d marks left", r, marks())
	}
}
