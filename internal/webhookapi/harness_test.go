package webhookapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/testing/webhooktest"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// testConfig is a configuration for the routes' tests: loopback receivers
// allowed, no per-host caps.
func testConfig(t testing.TB) webhook.Config {
	c := webhook.DefaultConfig()
	c.Keys = webhooktest.Keys(t)
	c.AllowLoopback = true
	c.HostRate, c.UnverifiedHostRate = 0, 0
	c.Partitions = 3
	return c
}

// harness is an API node with the key and webhook routes over one test
// database and Redis prefix; no worker runs, so nothing is delivered.
type harness struct {
	webhooktest.Client // the account holder's requests, once the node runs
	env                *apptest.Env
	node               *apptest.Node
	keys               *apikey.Service
	cfg                webhook.Config
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
	h.Client = webhooktest.Client{Node: h.node, Keys: h.keys}
	return h
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

// created is the shape webhooktest reads a new webhook into.
type created = webhooktest.Created
