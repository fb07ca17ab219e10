package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/testing/webhooktest"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/webhook/signature"
)

// TestResealMovesEverySealedValue: re-sealing under a new key moves the
// secret, the previous secret of a rotation's overlap and the Ed25519 key
// together, so a worker that holds only the new key still signs with all
// three.
func TestResealMovesEverySealedValue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("reseal"))
	rc := newReceiver(t, nil)
	stop := h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	stop()
	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/rotate-secret", key, map[string]any{"overlapSeconds": 3600})
	var rot struct{ Data webhookView }
	r.JSON(t, &rot)
	v := h.Patch(t, key, c.ID, map[string]any{"signatureScheme": "both"})

	newSpec, err := keyring.Generate("k2")
	testenv.Must(t, err, "key")
	both, err := keyring.Parse(newSpec + "," + webhooktest.KeySpec(t))
	testenv.Must(t, err, "keyring")
	n, err := webhook.Reseal(context.Background(), h.env.Store, both, apptest.Logger())
	if err != nil || n < 1 {
		t.Fatalf("reseal: %d %v", n, err)
	}
	only, err := keyring.Parse(newSpec)
	testenv.Must(t, err, "keyring")
	cfg := h.cfg
	cfg.Keys = only
	h.startWorker(t, cfg, "w2")
	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	testenv.WaitFor(t, "a delivery", 30*time.Second, func() bool { return len(rc.deliveries()) >= 1 })
	d := rc.deliveries()[0]
	now := time.Now()
	if err := signature.Verify(c.Secret, d.Header, d.Body, now, 0); err != nil {
		t.Errorf("the old secret: %v", err)
	}
	if err := signature.Verify(rot.Data.Secret, d.Header, d.Body, now, 0); err != nil {
		t.Errorf("the new secret: %v", err)
	}
	if err := signature.VerifyV1a(*v.PublicKey, d.Header, d.Body, now, 0); err != nil {
		t.Errorf("v1a: %v", err)
	}
	if n := len(strings.Fields(d.Header.Get("webhook-signature"))); n != 3 {
		t.Errorf("%d signatures, want 3: %q", n, d.Header.Get("webhook-signature"))
	}
}
