package webhookapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

var (
	keysOnce sync.Once
	keySpec  string
)

// testKeys is one keyring for the whole test binary.
func testKeys(t testing.TB) *keyring.Keyring {
	keysOnce.Do(func() {
		var err error
		if keySpec, err = keyring.Generate("test1"); err != nil {
			panic(err)
		}
	})
	k, err := keyring.Parse(keySpec)
	testenv.Must(t, err, "keyring")
	return k
}

// testConfig is a configuration for the routes' tests: loopback receivers
// allowed, no per-host caps.
func testConfig(t testing.TB) webhook.Config {
	c := webhook.DefaultConfig()
	c.Keys = testKeys(t)
	c.AllowLoopback = true
	c.HostRate, c.UnverifiedHostRate = 0, 0
	c.Partitions = 3
	return c
}

// harness is an API node with the key and webhook routes over one test
// database and Redis prefix; no worker runs, so nothing is delivered.
type harness struct {
	env  *apptest.Env
	node *apptest.Node
	keys *apikey.Service
	cfg  webhook.Config
}

type harnessOpt struct {
	cfg *webhook.Config
	env *apptest.Env // nil: a new one
}

func newHarness(t *testing.T, o harnessOpt) *harness {
	t.Helper()
	h := &harness{env: o.env, cfg: testConfig(t)}
	if h.env == nil {
		h.env = apptest.NewEnv(t, apptest.Options{})
	}
	if o.cfg != nil {
		h.cfg = *o.cfg
	}
	opt, err := redis.ParseURL(h.env.RedisURL)
	testenv.Must(t, err, "redis url")
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	var deps app.Deps
	h.node = h.env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			svc, err := apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			h.keys = svc
			svc.Routes(api)
			a, err := webhookapi.NewAPI(webhookapi.APIDeps{Auth: svc.Require(apikey.RequireOptions{}), Store: deps.Store,
				Queue: queue.New(rdb, h.env.Prefix, h.cfg.Partitions), Config: h.cfg, Logger: apptest.Logger()})
			testenv.Must(t, err, "webhook api")
			a.Routes(api)
		},
	})
	t.Cleanup(h.keys.Close)
	return h
}

// key makes an API key of account.
func (h *harness) key(t *testing.T, account string) string {
	t.Helper()
	acc, _, err := h.keys.Store().EnsureAccount(context.Background(), account)
	testenv.Must(t, err, "account")
	k, err := h.keys.Create(context.Background(), acc.ID, "tests")
	testenv.Must(t, err, "key")
	return k.Secret
}

// do sends a request with key (none: ""); body is JSON-encoded unless it
// is a string or bytes.
func (h *harness) do(t *testing.T, method, path, key string, body any) *apptest.Response {
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
	return h.node.Do(t, method, path, b, hdr)
}

// created is the answer to POST /webhooks.
type created struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Active bool     `json:"active"`
	Secret string   `json:"secret"`
}

func (h *harness) create(t *testing.T, key string, body map[string]any) created {
	t.Helper()
	r := h.do(t, http.MethodPost, "/webhooks", key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	var out struct{ Data created }
	r.JSON(t, &out)
	return out.Data
}

// webhookView is a webhook as the API shows it, with issue 26's fields.
type webhookView struct {
	ID                      string  `json:"id"`
	Active                  bool    `json:"active"`
	DisabledReason          *string `json:"disabledReason"`
	SignatureScheme         string  `json:"signatureScheme"`
	PublicKey               *string `json:"publicKey"`
	RateLimitPerSecond      *int    `json:"rateLimitPerSecond"`
	PreviousSecretExpiresAt *string `json:"previousSecretExpiresAt"`
	Secret                  string  `json:"secret"`
}

func (h *harness) webhook(t *testing.T, key, id string) webhookView {
	t.Helper()
	r := h.do(t, http.MethodGet, "/webhooks/"+id, key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get webhook: %d %s", r.Status, r.Body)
	}
	var out struct{ Data webhookView }
	r.JSON(t, &out)
	return out.Data
}

func (h *harness) patch(t *testing.T, key, id string, body map[string]any) webhookView {
	t.Helper()
	r := h.do(t, http.MethodPatch, "/webhooks/"+id, key, body)
	if r.Status != http.StatusOK {
		t.Fatalf("patch webhook %v: %d %s", body, r.Status, r.Body)
	}
	var out struct{ Data webhookView }
	r.JSON(t, &out)
	return out.Data
}

// receiver is an HTTP server on 127.0.0.1 a webhook can point at (the
// routes check that its host resolves; no worker sends it anything here).
type receiver struct{ srv *httptest.Server }

// newReceiver starts a receiver answering every request with respond
// (nil: 204).
func newReceiver(t *testing.T, respond func(n int, r *http.Request) int) *receiver {
	var mu sync.Mutex
	n := 0
	rc := &receiver{srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		status := http.StatusNoContent
		if respond != nil {
			status = respond(k, r)
		}
		w.WriteHeader(status)
	}))}
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

// Agents for filters (valid base58 addresses).
const (
	agentA = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	agentB = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
)
