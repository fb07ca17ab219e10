package webhooktest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook/keyring"
)

// keySpec is the keyring of the whole test binary, generated once.
var keySpec = sync.OnceValues(func() (string, error) { return keyring.Generate("test1") })

// KeySpec is the keyring's text (ATTESTD_WEBHOOK_KEYS' form), for a test
// that adds a key beside it.
func KeySpec(t testing.TB) string {
	t.Helper()
	spec, err := keySpec()
	testenv.Must(t, err, "generate keyring")
	return spec
}

// Keys is one keyring for the whole test binary: every node a test starts
// opens the secrets the others sealed.
func Keys(t testing.TB) *keyring.Keyring {
	t.Helper()
	k, err := keyring.Parse(KeySpec(t))
	testenv.Must(t, err, "keyring")
	return k
}

// Client is an account holder at a node serving the key and webhook
// routes.
type Client struct {
	Node *apptest.Node
	Keys *apikey.Service
}

// Key makes an API key of account.
func (c Client) Key(t *testing.T, account string) string {
	t.Helper()
	acc, _, err := c.Keys.Store().EnsureAccount(context.Background(), account)
	testenv.Must(t, err, "account")
	k, err := c.Keys.Create(context.Background(), acc.ID, "tests")
	testenv.Must(t, err, "key")
	return k.Secret
}

// Do sends a request with key (none: ""); body is JSON-encoded unless it
// is a string or bytes.
func (c Client) Do(t *testing.T, method, path, key string, body any) *apptest.Response {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		b, err = json.Marshal(v)
		testenv.Must(t, err, "encode body")
	}
	hdr := map[string]string{}
	if key != "" {
		hdr["x-api-key"] = key
	}
	return c.Node.Do(t, method, path, b, hdr)
}

// Created is the answer to POST /webhooks.
type Created struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Active bool     `json:"active"`
	Secret string   `json:"secret"`
}

// Create makes a webhook and fails the test unless it is created.
func (c Client) Create(t *testing.T, key string, body map[string]any) Created {
	t.Helper()
	r := c.Do(t, http.MethodPost, "/webhooks", key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	var out struct{ Data Created }
	r.JSON(t, &out)
	return out.Data
}

// View is a webhook as the API shows it.
type View struct {
	ID                      string  `json:"id"`
	Active                  bool    `json:"active"`
	DisabledReason          *string `json:"disabledReason"`
	SignatureScheme         string  `json:"signatureScheme"`
	PublicKey               *string `json:"publicKey"`
	RateLimitPerSecond      *int    `json:"rateLimitPerSecond"`
	PreviousSecretExpiresAt *string `json:"previousSecretExpiresAt"`
	Secret                  string  `json:"secret"`
}

// Webhook reads a webhook (GET /webhooks/:id).
func (c Client) Webhook(t *testing.T, key, id string) View {
	t.Helper()
	return c.view(t, http.MethodGet, key, id, nil)
}

// Patch changes a webhook (PATCH /webhooks/:id) and returns what the API
// shows of it then.
func (c Client) Patch(t *testing.T, key, id string, body map[string]any) View {
	t.Helper()
	return c.view(t, http.MethodPatch, key, id, body)
}

func (c Client) view(t *testing.T, method, key, id string, body any) View {
	t.Helper()
	r := c.Do(t, method, "/webhooks/"+id, key, body)
	if r.Status != http.StatusOK {
		t.Fatalf("%s webhook %v: %d %s", method, body, r.Status, r.Body)
	}
	var out struct{ Data View }
	r.JSON(t, &out)
	return out.Data
}
