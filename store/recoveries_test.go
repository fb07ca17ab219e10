package store

import (
	"context"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testenv"
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
