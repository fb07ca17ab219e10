package webhookapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/gagliardetto/solana-go"
	"go.yaml.in/yaml/v3"
)

// TestCatalogSchemasInOpenAPI: openapi.yaml holds exactly the schemas the
// catalog generates from the payload types (one source).
func TestCatalogSchemasInOpenAPI(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "openapi", "openapi.yaml"))
	testenv.Must(t, err, "read openapi.yaml")
	var doc struct {
		Components struct {
			Schemas map[string]any `yaml:"schemas"`
		} `yaml:"components"`
	}
	testenv.Must(t, yaml.Unmarshal(b, &doc), "parse openapi.yaml")
	for name, want := range webhookapi.CatalogSchemas() {
		got, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.yaml has no schema %s", name)
			continue
		}
		if !reflect.DeepEqual(normal(t, got), normal(t, want)) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("schema %s differs from the catalog's:\nopenapi: %s\ncatalog: %s", name, g, w)
		}
	}
}

func normal(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	testenv.Must(t, err, "marshal")
	var out any
	testenv.Must(t, json.Unmarshal(b, &out), "unmarshal")
	return out
}

// TestWritePathPayloadsMatchTheCatalog: the payloads the one write path
// (store.Apply) stores in the outbox decode strictly into the catalog's
// types, every field present.
func TestWritePathPayloadsMatchTheCatalog(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	st := env.Store
	rnd := func() (k [32]byte) { _, _ = rand.Read(k[:]); return k }
	pk := func() string { k := rnd(); return solana.PublicKeyFromBytes(k[:]).String() }
	var sig solana.Signature
	_, _ = rand.Read(sig[:])
	agent := pk()
	ev := func(i int) store.Event {
		return store.Event{TxSignature: sig.String(), EventIndex: i, Slot: 99, Commitment: attestation.Confirmed}
	}
	now := time.Now().UTC()
	b := &store.Batch{
		Registrations: []store.AgentRegistration{{Event: ev(0), PDA: agent, Operator: pk(), AgentID: rnd(), PolicyRoot: rnd(), At: now}},
		PolicyUpdates: []store.PolicyUpdate{{Event: ev(1), PDA: agent, PolicyRoot: rnd(), At: now}},
		Revocations:   []store.AgentRevocation{{Event: ev(2), PDA: agent, At: now}},
	}
	_, err := st.Apply(context.Background(), b)
	testenv.Must(t, err, "apply")
	rows, err := st.Pool().Query(context.Background(), `SELECT event_type, payload::text FROM outbox ORDER BY id`)
	testenv.Must(t, err, "outbox")
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var typ, payload string
		testenv.Must(t, rows.Scan(&typ, &payload), "scan")
		var target any
		switch typ {
		case store.EventAgentRegistered:
			target = &webhookapi.AgentRegisteredData{}
		case store.EventAgentPolicyUpdated:
			target = &webhookapi.AgentPolicyUpdatedData{}
		case store.EventAgentRevoked:
			target = &webhookapi.AgentRevokedData{}
		default:
			continue
		}
		seen[typ] = true
		d := json.NewDecoder(bytes.NewReader([]byte(payload)))
		d.DisallowUnknownFields()
		if err := d.Decode(target); err != nil {
			t.Errorf("%s payload %s: %v", typ, payload, err)
		}
		var fields map[string]any
		_ = json.Unmarshal([]byte(payload), &fields)
		if want := reflect.TypeOf(target).Elem().NumField(); len(fields) != want {
			t.Errorf("%s payload has %d fields, its type %d: %s", typ, len(fields), want, payload)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("payloads seen: %v", seen)
	}
}

// TestEventCatalog: public, cacheable (304 on its ETag), every event type
// with its schema and an example (the harness validates the answer, and so
// each example, against openapi.yaml's schemas).
func TestEventCatalog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	r := h.Do(t, http.MethodGet, "/webhooks/event-types", "", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Cache-Control"), "public") || r.Header.Get("ETag") == "" {
		t.Fatalf("catalog: %d %v", r.Status, r.Header)
	}
	var out struct {
		Data []struct {
			Name         string
			Subscribable bool
			SchemaName   string
		}
	}
	r.JSON(t, &out)
	var names []string
	for _, e := range out.Data {
		names = append(names, e.Name)
	}
	want := "attestation.created agent.registered agent.revoked agent.policy_updated webhook.test webhook.disabled"
	if strings.Join(names, " ") != want {
		t.Fatalf("catalog lists %v, want %s", names, want)
	}
	r2 := h.node.Do(t, http.MethodGet, "/webhooks/event-types", nil, map[string]string{"If-None-Match": r.Header.Get("ETag")})
	if r2.Status != http.StatusNotModified {
		t.Fatalf("revalidation: %d", r2.Status)
	}
	if r := h.Do(t, http.MethodGet, "/webhooks/event-types?x=1", "", nil); r.Status != http.StatusBadRequest {
		t.Errorf("unknown query parameter: %d", r.Status)
	}
}
