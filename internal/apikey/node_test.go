package apikey_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// keyNode is an API node with the key routes, and its key service.
type keyNode struct {
	*apptest.Node
	svc *apikey.Service
	reg *prometheus.Registry
}

type nodeOpt struct {
	noRedis   bool          // the node never hears announcements: TTL only
	redis     *redis.Client // the node's Redis client (default: a fresh one)
	maxActive int
	touch     time.Duration
	onMissing fiber.Handler
	now       func() time.Time // the key service's clock (default time.Now)
}

// manualClock is a clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startNode(t *testing.T, env *apptest.Env, o nodeOpt) *keyNode {
	t.Helper()
	var deps app.Deps
	kn := &keyNode{reg: prometheus.NewRegistry()}
	kn.Node = env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			opt := apikey.Deps{Config: apikey.Config{MaxActiveKeys: o.maxActive, TouchInterval: o.touch},
				Store: deps.Store, Channel: env.Prefix + apikey.ChannelSuffix, Registerer: kn.reg, Logger: deps.Logger, Now: o.now}
			switch {
			case o.redis != nil:
				opt.Redis = o.redis
			case !o.noRedis:
				opt.Redis = apptest.NewRedis(t, env.RedisURL)
			}
			svc, err := apikey.New(context.Background(), opt)
			testenv.Must(t, err, "key service")
			kn.svc = svc
			svc.Routes(api)
			api.Route(http.MethodGet, "/test/seam", svc.Require(apikey.RequireOptions{OnMissingKey: o.onMissing}),
				func(c *fiber.Ctx) error { return c.SendString("route ran") })
		},
	})
	t.Cleanup(kn.svc.Close)
	// The first subscription drops every cached lookup (announcements made
	// before it were not heard); tests that count lookups or rely on a
	// cached one start after it.
	select {
	case <-kn.svc.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("key service not subscribed to revocations within 10 s")
	}
	return kn
}

// newKey makes a key for the account, as `attestd keys create` does.
func newKey(t *testing.T, svc *apikey.Service, account, label string) apikey.Created {
	t.Helper()
	acc, _, err := svc.Store().EnsureAccount(context.Background(), account)
	testenv.Must(t, err, "account")
	k, err := svc.Create(context.Background(), acc.ID, label)
	testenv.Must(t, err, "create key")
	return k
}

// seam calls the node's test route behind Require with key (it is not part
// of the contract, so it is not checked against openapi.yaml).
func seam(t *testing.T, kn *keyNode, key string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, httpapi.Prefix+"/test/seam", nil)
	req.Header.Set("x-api-key", key)
	res, err := kn.Fiber().Test(req, 5000)
	testenv.Must(t, err, "request")
	res.Body.Close()
	return res.StatusCode
}

func withKey(key string) map[string]string { return map[string]string{"x-api-key": key} }

// dbLookups is how many key lookups reached the database.
func dbLookups(kn *keyNode) float64 {
	mfs, err := kn.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "attestd_apikey_lookups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == "database" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

type keyList struct {
	Data []struct {
		Prefix     string  `json:"prefix"`
		Account    string  `json:"account"`
		Label      string  `json:"label"`
		Role       string  `json:"role"`
		Revoked    bool    `json:"revoked"`
		LastUsedAt *string `json:"lastUsedAt"`
	} `json:"data"`
	Pagination struct {
		Limit, Offset int
		Total         int64
	} `json:"pagination"`
}

func mustGenerate(t *testing.T) string {
	k, err := apikey.Generate()
	testenv.Must(t, err, "generate")
	return k.Secret
}
