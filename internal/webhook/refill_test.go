package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestRefilledEventsKeepTheirWebhookID: a database restored from a backup
// loses the events made after it, and the indexer makes them again from
// the chain. Their deliveries carry the same webhook-id as the first time
// (derived from the webhook and the chain event, not drawn at random), so
// a receiver that deduplicates on webhook-id, as Standard Webhooks asks,
// sees each event once; the id is store.DeliveryID's.
func TestRefilledEventsKeepTheirWebhookID(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2})
	h := newHarness(t, harnessOpt{env: env})
	key := h.Key(t, "refill")
	rc := newReceiver(t, nil)
	h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	ctx := context.Background()
	// The backup: the outbox as it stands now.
	var backup int64
	testenv.Must(t, env.Store.Pool().QueryRow(ctx, `SELECT COALESCE(max(id), 0) FROM outbox`).Scan(&backup), "outbox")
	recs := seed.NewAttestations(env.Seeded.Agents, 6, time.Now(), 1<<32, 11)
	pdas := make([]string, len(recs))
	for i, r := range recs {
		pdas[i] = r.PDA
	}
	ids := func(want int) map[string]int {
		t.Helper()
		testenv.WaitForState(t, fmt.Sprintf("%d deliveries at the receiver", want), testenv.Patience, func() (bool, string) {
			n := len(rc.deliveries())
			return n >= want, fmt.Sprint(n)
		})
		seen := map[string]int{}
		for _, d := range rc.deliveries() {
			seen[d.Header.Get("webhook-id")]++
		}
		return seen
	}
	_, err := env.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	first := ids(len(recs))
	if len(first) != len(recs) {
		t.Fatalf("%d webhook-ids for %d events", len(first), len(recs))
	}
	// Restored from the backup: what came after it is gone...
	_, err = env.Store.Pool().Exec(ctx, `DELETE FROM attestations WHERE pda = ANY($1)`, pdas)
	testenv.Must(t, err, "lose the attestations")
	_, err = env.Store.Pool().Exec(ctx, `DELETE FROM outbox WHERE id > $1`, backup)
	testenv.Must(t, err, "lose the events and their deliveries")
	// ... and the refill from the chain makes the same events again.
	_, err = env.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "refill")
	both := ids(2 * len(recs))
	if len(both) != len(recs) {
		t.Fatalf("after the refill the receiver saw %d webhook-ids for %d events: %v", len(both), len(recs), both)
	}
	for id, n := range both {
		if n != 2 || first[id] != 1 {
			t.Errorf("webhook-id %s sent %d times in all, %d before the restore", id, n, first[id])
		}
	}
	for _, r := range recs {
		id := store.DeliveryID(c.ID, store.EventAttestationCreated, fmt.Sprintf("%s/%s/%d/%d", r.PDA, r.TxSignature, r.EventIndex, r.Slot))
		if both[id] != 2 {
			t.Errorf("attestation %s: no delivery under %s, its derived id", r.PDA, id)
		}
	}
}
