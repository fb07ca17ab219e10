package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/attestd/attestd/ratelimit"
	"github.com/mr-tron/base58"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// harness is a node as attestd serve composes it for the web application:
// the public API, the pages and sign-in, keys (with sessions), webhooks.
type harness struct {
	env  *apptest.Env
	node *apptest.Node
	keys *apikey.Service
	web  *web.Web
	rdb  *redis.Client
	now  func() time.Time // the web application's clock
}

type harnessOpt struct {
	agents, attestations int
	now                  func() time.Time
	webhookCfg           func(*webhook.Config)
	// origin is the node's public origin (default http://console.test);
	// "-" leaves it unset (the console off).
	origin string
	// chainID is the Chain ID sign-in requires (default mainnet).
	chainID string
	// newAccounts bounds the accounts one client IP makes per hour (0: none).
	newAccounts int
	// resolver finds the client IP (nil: the socket peer).
	resolver *ratelimit.IPResolver
	// limit, when set, puts the per-IP request limit in front of the
	// node as attestd serve does (limit requests a minute).
	limit int
}

func newHarness(t testing.TB, o harnessOpt) *harness {
	t.Helper()
	h := &harness{env: apptest.NewEnv(t, apptest.Options{Agents: o.agents, Attestations: o.attestations}), now: o.now}
	if h.now == nil {
		h.now = time.Now
	}
	h.rdb = apptest.NewRedis(t, h.env.RedisURL)
	wopt, err := redis.ParseURL(h.env.RedisURL)
	testenv.Must(t, err, "redis url")
	wopt.ReadTimeout, wopt.WriteTimeout = 3*time.Second, 3*time.Second
	rdb := redis.NewClient(wopt)
	t.Cleanup(func() { rdb.Close() })
	spec, err := keyring.Generate("k1")
	testenv.Must(t, err, "webhook key")
	ring, err := keyring.Parse(spec)
	testenv.Must(t, err, "keyring")
	wcfg := webhook.DefaultConfig()
	wcfg.Keys, wcfg.AllowLoopback = ring, true
	if o.webhookCfg != nil {
		o.webhookCfg(&wcfg)
	}
	cfg := web.Config{SessionTTL: time.Hour, ChainID: o.chainID, NewAccountsPerHour: o.newAccounts}
	switch o.origin {
	case "-":
	case "":
		cfg.Origin, err = config.ParseOrigin("http://console.test")
	default:
		cfg.Origin, err = config.ParseOrigin(o.origin)
	}
	testenv.Must(t, err, "origin")
	var deps app.Deps
	h.node = h.env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) {
			if o.limit > 0 {
				l, err := ratelimit.New(rdb, ratelimit.Config{Limit: o.limit, Window: time.Minute, KeyPrefix: h.env.Prefix + "rl:"}, nil, apptest.Logger())
				testenv.Must(t, err, "rate limiter")
				t.Cleanup(l.Close)
				d.Middleware = append(d.Middleware, l.Middleware())
			}
			deps = *d
		},
		Routes: func(api *app.API) {
			h.web, err = web.New(web.Deps{Store: deps.Store, Redis: rdb, Prefix: h.env.Prefix + "web:",
				Config: cfg, Resolver: o.resolver, Logger: apptest.Logger(), Now: func() time.Time { return h.now() }})
			testenv.Must(t, err, "web")
			h.web.Routes(api)
			h.keys, err = apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Logger: apptest.Logger(), Sessions: h.web})
			testenv.Must(t, err, "key service")
			h.keys.Routes(api)
			hooks, err := webhookapi.NewAPI(webhookapi.APIDeps{Auth: h.keys.Require(apikey.RequireOptions{AllowSession: true}), Store: deps.Store, Queue: queue.New(rdb, h.env.Prefix, wcfg.Partitions),
				Config: wcfg, Logger: apptest.Logger()})
			testenv.Must(t, err, "webhook api")
			hooks.Routes(api)
			prem, err := premium.New(premium.Deps{Auth: h.keys.Require(apikey.RequireOptions{}), Store: deps.Store, Cache: deps.Cache, Logger: apptest.Logger()})
			testenv.Must(t, err, "premium")
			prem.Routes(api) // as attestd serve without payments
		},
	})
	t.Cleanup(h.keys.Close)
	return h
}

// wallet is a test wallet: an Ed25519 key and its base58 address.
type wallet struct {
	priv    ed25519.PrivateKey
	address string
}

func newWallet(t testing.TB) wallet {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	testenv.Must(t, err, "wallet key")
	return wallet{priv: priv, address: base58.Encode(pub)}
}

func (w wallet) sign(msg string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(w.priv, []byte(msg)))
}

// nonce asks the node for a nonce.
func (h *harness) nonce(t testing.TB) web.NonceView {
	t.Helper()
	r := h.node.Get(t, "/auth/nonce")
	if r.Status != http.StatusOK {
		t.Fatalf("nonce: %d %s", r.Status, r.Body)
	}
	var out struct{ Data web.NonceView }
	r.JSON(t, &out)
	return out.Data
}

// message is the sign-in message for w with nonce n, as the page builds it.
func (h *harness) message(w wallet, n web.NonceView) web.Message {
	now := h.now().UTC().Truncate(time.Second)
	return web.Message{Domain: n.Domain, Address: w.address, Statement: n.Statement, URI: n.URI, Version: "1", ChainID: n.ChainID,
		Nonce: n.Nonce, IssuedAt: now, ExpirationTime: now.Add(5 * time.Minute)}
}

// signIn posts a signed message and returns the answer; hdr adds headers
// (Host included).
func (h *harness) signIn(t testing.TB, text, sig string, hdr ...map[string]string) *apptest.Response {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"message": text, "signature": sig})
	var header map[string]string
	if len(hdr) > 0 {
		header = hdr[0]
	}
	return h.node.Do(t, http.MethodPost, "/auth/signin", b, header)
}

// session is a signed-in browser: its cookie and CSRF token.
type session struct {
	cookie, csrf, account string
}

func (h *harness) login(t testing.TB, w wallet) session {
	t.Helper()
	msg := h.message(w, h.nonce(t)).String()
	r := h.signIn(t, msg, w.sign(msg))
	if r.Status != http.StatusOK {
		t.Fatalf("sign in: %d %s", r.Status, r.Body)
	}
	var out struct{ Data web.SessionView }
	r.JSON(t, &out)
	var cookie string
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == web.CookieName {
			cookie = c.Value
		}
	}
	if cookie == "" || out.Data.CSRFToken == "" {
		t.Fatalf("sign in set no cookie or CSRF token: %v %s", r.Header, r.Body)
	}
	return session{cookie: cookie, csrf: out.Data.CSRFToken, account: out.Data.Account}
}

// do sends a request as the session; csrf adds its token.
func (h *harness) do(t testing.TB, s session, csrf bool, method, path string, body any) *apptest.Response {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		b, err = json.Marshal(body)
		testenv.Must(t, err, "body")
	}
	hdr := map[string]string{}
	if s.cookie != "" {
		hdr["Cookie"] = web.CookieName + "=" + s.cookie
	}
	if csrf {
		hdr[web.CSRFHeader] = s.csrf
	}
	return h.node.Do(t, method, path, b, hdr)
}
