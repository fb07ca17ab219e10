package openapi_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/stream"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/internal/webhookapi"
	"github.com/mr-tron/base58"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	record     = flag.Bool("record", false, "write the answers TestDriveEveryOperation receives to -answers (make answers)")
	recordInto = flag.String("answers", answersDir, "where -record writes")
)

// The limits of the driven node, low so that their 409s are reached.
const maxKeys, maxWebhooks = 4, 3

// fullNode starts a node with every feature a node serves without
// payments (web sign-in, keys, webhooks, premium behind keys, the
// transparency log with logConfig's key, the live stream, x402's discovery
// documents, the MCP endpoint at /mcp), over env;
// limit > 0 puts the per-IP rate limiter in front.
func fullNode(t *testing.T, env *apptest.Env, limit int) (*apptest.Node, *apikey.Service) {
	t.Helper()
	wopt, err := redis.ParseURL(env.RedisURL)
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
	wcfg.MaxPerAccount = maxWebhooks
	origin, err := config.ParseOrigin("http://console.test")
	testenv.Must(t, err, "origin")
	// The MCP endpoint answers for the node's own address only (Host).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	mcpOrigin, err := config.ParseOrigin("http://" + ln.Addr().String())
	testenv.Must(t, err, "MCP origin")
	var deps app.Deps
	var keys *apikey.Service
	var logSrv *translog.Server
	node := env.StartNode(t, apptest.NodeOptions{
		Listener: ln,
		Configure: func(d *app.Deps) {
			lcfg := logConfig(t)
			if limit > 0 {
				d.Middleware = append(d.Middleware, env.NewLimiter(t, limit).Middleware())
				lcfg.TileRate = limit // the tiles' own guard: a burst of 10, then 429
			}
			logSrv = translog.NewServer(translog.ServerDeps{Store: d.Store, Cache: d.Cache, Config: lcfg,
				Logger: apptest.Logger(), Refresh: 20 * time.Millisecond})
			logSrv.Start(t.Context())
			d.Unlimited = append(d.Unlimited, logSrv.OriginRoutes()...)
			scfg := stream.DefaultConfig()
			scfg.Lifetime, scfg.Poll = time.Second, 50*time.Millisecond // a 200 that ends
			hub := stream.NewHub(stream.HubDeps{Store: d.Store, Redis: rdb, Prefix: env.Prefix, Config: scfg, Logger: apptest.Logger()})
			t.Cleanup(hub.Close)
			d.Stream = stream.New(stream.Deps{Hub: hub, Registerer: prometheus.NewRegistry()}).Serve
			deps = *d
		},
		Routes: func(api *app.API) {
			site, err := web.New(web.Deps{Store: deps.Store, Redis: rdb, Prefix: env.Prefix + "web:",
				Config: web.Config{SessionTTL: time.Hour, Origin: origin}, Logger: apptest.Logger()})
			testenv.Must(t, err, "web")
			site.Routes(api)
			keys, err = apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Logger: apptest.Logger(), Sessions: site,
				Config: apikey.Config{MaxActiveKeys: maxKeys}})
			testenv.Must(t, err, "key service")
			keys.Routes(api)
			hooks, err := webhookapi.NewAPI(webhookapi.APIDeps{Auth: keys.Require(apikey.RequireOptions{AllowSession: true}), Store: deps.Store, Queue: queue.New(rdb, env.Prefix, wcfg.Partitions),
				Config: wcfg, Logger: apptest.Logger()})
			testenv.Must(t, err, "webhook api")
			hooks.Routes(api)
			prem, err := premium.New(premium.Deps{Auth: keys.Require(apikey.RequireOptions{}), Store: deps.Store, Cache: deps.Cache, Logger: apptest.Logger()})
			testenv.Must(t, err, "premium")
			prem.Routes(api)
			logSrv.Routes(api)
			discovery(t, deps.Store, api)
			remoteMCP(t, api, mcpOrigin)
		},
	})
	t.Cleanup(keys.Close)
	return node, keys
}

// TestDriveEveryOperation sends, to nodes with every feature but x402
// payments, the requests that provoke every documented answer from 200 to
// 429 (all but the 402s and 409s of x402, which x402fiber's tests
// provoke), every answer validated by the apptest client (kin-openapi and
// the strict validator). With -record it writes them to testdata/answers
// (make answers, which then adds the first answer of every other operation
// and status the packages' tests receive: x402's, and the 503s).
func TestDriveEveryOperation(t *testing.T) {
	if *record {
		dir, err := filepath.Abs(*recordInto)
		testenv.Must(t, err, "answers dir")
		t.Setenv(apptest.RecordEnv, dir)
	}
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 40})
	fillLog(t, env.Store, env.Seeded.Agents, 300)
	node, keys := fullNode(t, env, 0)
	acc, _, err := keys.Store().EnsureAccount(context.Background(), "driver")
	testenv.Must(t, err, "account")
	admin, err := keys.CreateWithRole(context.Background(), acc.ID, "admin", apikey.RoleAdmin)
	testenv.Must(t, err, "admin key")
	key := map[string]string{"x-api-key": admin.Secret}
	agent := env.Seeded.Agents[0].PDA.String()

	expect := func(r *apptest.Response, want int, what string) {
		t.Helper()
		if r.Status != want {
			t.Errorf("%s: %d, want %d: %s", what, r.Status, want, r.Body)
		}
	}
	// A webhook and its delivery, to aim the webhook routes at.
	hook := node.Do(t, http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/hook","events":["attestation.created"]}`), key)
	expect(hook, http.StatusCreated, "create webhook")
	var created struct{ Data struct{ ID string } }
	hook.JSON(t, &created)
	wh := "/webhooks/" + created.Data.ID
	delivery := wh + "/deliveries/msg_" + strings.Repeat("0", 32) + "/retry"

	// 401: every keyed operation without a key.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/keys", `{"label":"x"}`}, {http.MethodGet, "/keys", ""}, {http.MethodDelete, "/keys/11111111", ""},
		{http.MethodPost, "/webhooks", `{"url":"http://127.0.0.1:9/","events":["agent.registered"]}`}, {http.MethodGet, "/webhooks", ""},
		{http.MethodGet, wh, ""}, {http.MethodPatch, wh, `{"active":false}`}, {http.MethodDelete, wh, ""},
		{http.MethodGet, wh + "/deliveries", ""}, {http.MethodPost, delivery, ""}, {http.MethodPost, wh + "/verify", ""},
		{http.MethodPost, wh + "/test", ""}, {http.MethodPost, "/auth/signout", ""}, {http.MethodGet, "/auth/session", ""},
		{http.MethodGet, "/auth/payments", ""}, {http.MethodGet, "/premium/full-history/" + agent, ""},
		{http.MethodGet, "/premium/forensic-report/" + agent, ""}, {http.MethodPost, "/premium/bulk-verify", `{"ids":["x"]}`},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		expect(node.Do(t, c.method, c.path, body, nil), http.StatusUnauthorized, c.method+" "+c.path+" without a key")
	}
	// 400: a query parameter no operation takes.
	for _, p := range []string{"/stats", "/health", "/auth/nonce", "/auth/session"} {
		expect(node.Get(t, p+"?unknown=1"), http.StatusBadRequest, p+"?unknown=1")
	}
	expect(node.Do(t, http.MethodPost, "/auth/signout?unknown=1", nil, nil), http.StatusBadRequest, "signout?unknown=1")
	// 413: a PATCH body over the bound.
	big := []byte(`{"description":"` + strings.Repeat("x", 20<<10) + `"}`)
	expect(node.Do(t, http.MethodPatch, wh, big, key), http.StatusRequestEntityTooLarge, "PATCH a webhook with 20 KiB")
	// 200s the rest of the suite also provokes, so that this test alone
	// records one answer of every operation.
	for _, p := range []string{"/health", "/stats", "/attestations?limit=2", "/agents/" + agent, "/agents/" + agent + "/stats",
		"/auth/nonce"} {
		expect(node.Get(t, p), http.StatusOK, p)
	}
	for _, p := range []string{"/keys", "/webhooks", wh, wh + "/deliveries", "/premium/full-history/" + agent + "?limit=2",
		"/premium/forensic-report/" + agent} {
		expect(node.Do(t, http.MethodGet, p, nil, key), http.StatusOK, p)
	}
	expect(node.Do(t, http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":["`+agent+`","nope"]}`), key), http.StatusOK, "bulk verify")
	expect(node.Do(t, http.MethodPost, wh+"/test", nil, key), http.StatusAccepted, "test webhook")

	// The operations of the explorer, the log, the stream, x402 discovery
	// and the webhooks' recovery, catalog and rotation.
	newReader, err := keys.CreateWithRole(context.Background(), acc.ID, "new reader", apikey.RoleRead)
	testenv.Must(t, err, "read key")
	driveNewOperations(t, node, admin.Secret, newReader.Secret, agent)
	driveDataset(t, env)
	driveMCP(t, node, admin.Secret, agent)

	// Every other documented answer but the x402 ones (x402fiber's tests)
	// and the 5xx, operation by operation.
	driveTheRest(t, node, keys, acc.ID, admin.Secret, agent)

	// 409: a wallet whose account name is taken by an account made on the
	// CLI (without a wallet).
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	testenv.Must(t, err, "wallet")
	wallet := base58.Encode(pub)
	_, _, err = keys.Store().EnsureAccount(context.Background(), store.WalletAccountName(wallet))
	testenv.Must(t, err, "account named as the wallet's")
	var nonce struct{ Data web.NonceView }
	node.Get(t, "/auth/nonce").JSON(t, &nonce)
	now := time.Now().UTC().Truncate(time.Second)
	msg := web.Message{Domain: nonce.Data.Domain, Address: wallet, Statement: nonce.Data.Statement, URI: nonce.Data.URI, Version: "1",
		ChainID: nonce.Data.ChainID, Nonce: nonce.Data.Nonce, IssuedAt: now, ExpirationTime: now.Add(5 * time.Minute)}.String()
	signin, _ := json.Marshal(map[string]string{"message": msg, "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(msg)))})
	expect(node.Do(t, http.MethodPost, "/auth/signin", signin, nil), http.StatusConflict, "sign in as a wallet whose account name is taken")

	// 429: a node limited to one request a minute, then every operation.
	limited, _ := fullNode(t, env, 1)
	limited.Get(t, "/stats")
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/health"}, {http.MethodGet, "/stats"}, {http.MethodGet, "/attestations"}, {http.MethodGet, "/attestations/x"},
		{http.MethodGet, "/agents/" + agent}, {http.MethodGet, "/agents/" + agent + "/stats"}, {http.MethodGet, "/openapi.json"},
		{http.MethodPost, "/keys"}, {http.MethodGet, "/keys"}, {http.MethodDelete, "/keys/11111111"},
		{http.MethodGet, "/auth/nonce"}, {http.MethodPost, "/auth/signin"}, {http.MethodGet, "/auth/session"},
		{http.MethodPost, "/auth/signout"}, {http.MethodGet, "/auth/payments"},
		{http.MethodGet, "/premium/full-history/" + agent}, {http.MethodGet, "/premium/forensic-report/" + agent},
		{http.MethodPost, "/premium/bulk-verify"}, {http.MethodPost, "/webhooks"}, {http.MethodGet, "/webhooks"},
		{http.MethodGet, wh}, {http.MethodPatch, wh}, {http.MethodDelete, wh}, {http.MethodGet, wh + "/deliveries"},
		{http.MethodPost, delivery}, {http.MethodPost, wh + "/verify"}, {http.MethodPost, wh + "/test"},
		{http.MethodGet, "/agents"}, {http.MethodGet, "/agents/" + agent + "/activity"}, {http.MethodGet, "/stats/activity"},
		{http.MethodGet, "/samples"}, {http.MethodGet, "/attestations/stream"}, {http.MethodGet, "/attestations/x/proof"},
		{http.MethodGet, "/stats/overview"},
		{http.MethodGet, "/log/consistency?from=1&to=1"}, {http.MethodGet, "/log/key"}, {http.MethodGet, "/webhooks/event-types"},
		{http.MethodPost, wh + "/recover"}, {http.MethodGet, wh + "/recoveries/rcv_" + strings.Repeat("0", 24)},
		{http.MethodPost, wh + "/rotate-secret"},
	} {
		expect(limited.Do(t, c.method, c.path, nil, key), http.StatusTooManyRequests, c.method+" "+c.path+" over the limit")
	}
	for _, p := range newRootPaths {
		expect(rootOf(limited).Get(t, p), http.StatusTooManyRequests, p+" over the limit")
	}
	expect(rootOf(limited).Do(t, http.MethodPost, "/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), mcpHeader),
		http.StatusTooManyRequests, "POST /mcp over the limit")
	// The log's checkpoint and tiles are outside that limit, behind their
	// own guard (1 a second here, a burst of 10): 429 past it.
	for _, p := range logOriginPaths {
		var r *apptest.Response
		for range 30 {
			if r = rootOf(limited).Get(t, p); r.Status == http.StatusTooManyRequests {
				break
			}
		}
		expect(r, http.StatusTooManyRequests, p+" past the tiles' guard")
	}
	if *record {
		t.Logf("recorded into %s", os.Getenv(apptest.RecordEnv))
	}
}

// driveTheRest provokes, on node, the 2xx, 304 and 4xx answers of every
// operation that TestDriveEveryOperation does not provoke itself.
func driveTheRest(t *testing.T, node *apptest.Node, keys *apikey.Service, account int64, adminKey, agent string) {
	t.Helper()
	read, err := keys.CreateWithRole(context.Background(), account, "read", apikey.RoleRead)
	testenv.Must(t, err, "read key")
	admin := map[string]string{"x-api-key": adminKey}
	reader := map[string]string{"x-api-key": read.Secret}
	send := func(method, path string, body []byte, hdr map[string]string, want int) *apptest.Response {
		t.Helper()
		r := node.Do(t, method, path, body, hdr)
		if r.Status != want {
			t.Errorf("%s %s: %d, want %d: %.300s", method, path, r.Status, want, r.Body)
		}
		return r
	}
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range h {
			out[a] = b
		}
		return out
	}
	// Public reads: 200, then 304 with the ETag, 400 and 404.
	var page struct{ Data []struct{ PDA string } }
	send(http.MethodGet, "/attestations?limit=1", nil, nil, http.StatusOK).JSON(t, &page)
	if len(page.Data) == 0 {
		t.Fatal("no attestation to aim at")
	}
	unknown := "11111111111111111111111111111112"
	for _, p := range []string{"/stats", "/attestations?limit=1", "/attestations/" + page.Data[0].PDA, "/agents/" + agent,
		"/agents/" + agent + "/stats", "/openapi.json"} {
		r := send(http.MethodGet, p, nil, nil, http.StatusOK)
		send(http.MethodGet, p, nil, map[string]string{"If-None-Match": r.Header.Get("ETag")}, http.StatusNotModified)
	}
	for _, p := range []string{"/attestations?limit=0", "/attestations/not-an-id", "/agents/not-an-id", "/agents/not-an-id/stats"} {
		send(http.MethodGet, p, nil, nil, http.StatusBadRequest)
	}
	for _, p := range []string{"/attestations/" + unknown, "/agents/" + unknown, "/agents/" + unknown + "/stats"} {
		send(http.MethodGet, p, nil, nil, http.StatusNotFound)
	}
	// Premium: 400, 404, 413, 415, 422.
	send(http.MethodGet, "/premium/full-history/"+agent+"?limit=0", nil, admin, http.StatusBadRequest)
	send(http.MethodGet, "/premium/forensic-report/"+agent+"?from=x", nil, admin, http.StatusBadRequest)
	send(http.MethodGet, "/premium/full-history/"+unknown, nil, admin, http.StatusNotFound)
	send(http.MethodGet, "/premium/forensic-report/"+unknown, nil, admin, http.StatusNotFound)
	send(http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":"x"}`), admin, http.StatusBadRequest)
	send(http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":[]}`), admin, http.StatusUnprocessableEntity)
	send(http.MethodPost, "/premium/bulk-verify", []byte(`{"ids":["`+strings.Repeat("x", 300<<10)+`"]}`), admin, http.StatusRequestEntityTooLarge)
	send(http.MethodPost, "/premium/bulk-verify", []byte(`ids=x`), with(admin, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)

	// Keys: 201, 200, 204, 400, 403 (a read key), 404, 409 (the limit), 413, 415.
	var made struct{ Data struct{ Prefix string } }
	send(http.MethodPost, "/keys", []byte(`{"label":"driven"}`), admin, http.StatusCreated).JSON(t, &made)
	send(http.MethodGet, "/keys", nil, admin, http.StatusOK)
	send(http.MethodGet, "/keys?limit=0", nil, admin, http.StatusBadRequest)
	send(http.MethodGet, "/keys", nil, reader, http.StatusForbidden)
	send(http.MethodPost, "/keys", []byte(`{"label":"x"}`), reader, http.StatusForbidden)
	send(http.MethodDelete, "/keys/"+made.Data.Prefix, nil, reader, http.StatusForbidden)
	send(http.MethodPost, "/keys", []byte(`{"label":5}`), admin, http.StatusBadRequest)
	send(http.MethodPost, "/keys", []byte(`{"label":"`+strings.Repeat("x", 64<<10)+`"}`), admin, http.StatusRequestEntityTooLarge)
	send(http.MethodPost, "/keys", []byte(`label=x`), with(admin, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	send(http.MethodDelete, "/keys/not-a-prefix", nil, admin, http.StatusBadRequest)
	send(http.MethodDelete, "/keys/11111111", nil, admin, http.StatusNotFound)
	send(http.MethodDelete, "/keys/"+made.Data.Prefix, nil, admin, http.StatusNoContent)
	for i := 0; i < maxKeys; i++ { // the admin and read keys count: the limit is met on the way
		if r := node.Do(t, http.MethodPost, "/keys", []byte(`{"label":"fill"}`), admin); r.Status == http.StatusConflict {
			break
		}
	}
	send(http.MethodPost, "/keys", []byte(`{"label":"one too many"}`), admin, http.StatusConflict)

	// Webhooks: 200, 202, 204, 400, 403, 404, 409, 413, 415.
	var hook struct{ Data struct{ ID string } }
	send(http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/a","events":["agent.revoked"]}`), admin, http.StatusCreated).JSON(t, &hook)
	wh := "/webhooks/" + hook.Data.ID
	none := "/webhooks/wh_" + strings.Repeat("0", 24)
	send(http.MethodPatch, wh, []byte(`{"description":"driven"}`), admin, http.StatusOK)
	var queued struct{ Data struct{ DeliveryID string } }
	send(http.MethodPost, wh+"/test", nil, admin, http.StatusAccepted).JSON(t, &queued)
	retry := wh + "/deliveries/" + queued.Data.DeliveryID + "/retry"
	send(http.MethodPost, retry, nil, admin, http.StatusAccepted)
	send(http.MethodPost, wh+"/verify", nil, admin, http.StatusAccepted)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/webhooks?limit=0"}, {http.MethodGet, wh + "?x=1"}, {http.MethodDelete, wh + "?x=1"},
		{http.MethodGet, wh + "/deliveries?limit=0"}, {http.MethodPost, wh + "/deliveries/msg_x/retry"},
		{http.MethodPost, wh + "/verify?x=1"}, {http.MethodPost, wh + "/test?x=1"},
	} {
		send(c.method, c.path, nil, admin, http.StatusBadRequest)
	}
	send(http.MethodPost, "/webhooks", []byte(`{"url":5}`), admin, http.StatusBadRequest)
	send(http.MethodPatch, wh, []byte(`{"active":"yes"}`), admin, http.StatusBadRequest)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/webhooks"}, {http.MethodGet, wh}, {http.MethodPatch, wh}, {http.MethodDelete, wh},
		{http.MethodGet, wh + "/deliveries"}, {http.MethodPost, retry}, {http.MethodPost, wh + "/verify"},
		{http.MethodPost, wh + "/test"}, {http.MethodPost, "/webhooks"},
	} {
		var body []byte
		if c.method == http.MethodPatch || c.path == "/webhooks" && c.method == http.MethodPost {
			body = []byte(`{"description":"x"}`)
		}
		send(c.method, c.path, body, reader, http.StatusForbidden)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, none}, {http.MethodPatch, none}, {http.MethodDelete, none}, {http.MethodGet, none + "/deliveries"},
		{http.MethodPost, none + "/deliveries/" + queued.Data.DeliveryID + "/retry"}, {http.MethodPost, none + "/verify"},
		{http.MethodPost, none + "/test"},
	} {
		var body []byte
		if c.method == http.MethodPatch {
			body = []byte(`{"description":"x"}`)
		}
		send(c.method, c.path, body, admin, http.StatusNotFound)
	}
	send(http.MethodPost, "/webhooks", []byte(`{"description":"`+strings.Repeat("x", 20<<10)+`"}`), admin, http.StatusRequestEntityTooLarge)
	send(http.MethodPost, "/webhooks", []byte(`url=x`), with(admin, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	send(http.MethodPatch, wh, []byte(`url=x`), with(admin, "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	send(http.MethodPatch, wh, []byte(`{"active":false}`), admin, http.StatusOK)
	send(http.MethodPost, retry, nil, admin, http.StatusConflict) // an inactive webhook
	send(http.MethodDelete, wh, nil, admin, http.StatusNoContent)
	for i := 0; i < maxWebhooks+1; i++ {
		if r := node.Do(t, http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/f","events":["agent.revoked"]}`), admin); r.Status == http.StatusConflict {
			break
		}
	}
	send(http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/g","events":["agent.revoked"]}`), admin, http.StatusConflict)

	// Sign-in: 200, 400, 401, 413, 415; then the session's 200s and 204, and a 403 without the CSRF token.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	testenv.Must(t, err, "wallet")
	wallet := base58.Encode(pub)
	var nonce struct{ Data web.NonceView }
	node.Get(t, "/auth/nonce").JSON(t, &nonce)
	now := time.Now().UTC().Truncate(time.Second)
	msg := web.Message{Domain: nonce.Data.Domain, Address: wallet, Statement: nonce.Data.Statement, URI: nonce.Data.URI, Version: "1",
		ChainID: nonce.Data.ChainID, Nonce: nonce.Data.Nonce, IssuedAt: now, ExpirationTime: now.Add(5 * time.Minute)}.String()
	signed := func(sig []byte) []byte {
		b, _ := json.Marshal(map[string]string{"message": msg, "signature": base64.StdEncoding.EncodeToString(sig)})
		return b
	}
	send(http.MethodPost, "/auth/signin", []byte(`{"message":5}`), nil, http.StatusBadRequest)
	send(http.MethodPost, "/auth/signin", signed(make([]byte, 64)), nil, http.StatusUnauthorized)
	send(http.MethodPost, "/auth/signin", []byte(`{"message":"`+strings.Repeat("x", 64<<10)+`"}`), nil, http.StatusRequestEntityTooLarge)
	send(http.MethodPost, "/auth/signin", []byte(`message=x`), map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType)
	in := send(http.MethodPost, "/auth/signin", signed(ed25519.Sign(priv, []byte(msg))), nil, http.StatusOK)
	var session struct{ Data web.SessionView }
	in.JSON(t, &session)
	var cookie string
	for _, c := range (&http.Response{Header: in.Header}).Cookies() {
		if c.Name == web.CookieName {
			cookie = c.Name + "=" + c.Value
		}
	}
	browser := map[string]string{"Cookie": cookie}
	send(http.MethodGet, "/auth/session", nil, browser, http.StatusOK)
	send(http.MethodGet, "/auth/payments", nil, browser, http.StatusOK)
	send(http.MethodGet, "/auth/payments?limit=0", nil, browser, http.StatusBadRequest)
	send(http.MethodPost, "/auth/signout", nil, browser, http.StatusForbidden)
	send(http.MethodPost, "/auth/signout", nil, with(browser, web.CSRFHeader, session.Data.CSRFToken), http.StatusNoContent)
}
