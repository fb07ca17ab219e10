package openapi_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/openapi"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/gagliardetto/solana-go"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/mod/sumdb/note"
)

var (
	logKeyOnce sync.Once
	logKey     translog.Key
	logKeyErr  error
)

// logConfig is the driven nodes' transparency log: one key for the test
// binary, so that every node serves the checkpoints fillLog signs.
func logConfig(t *testing.T) translog.Config {
	t.Helper()
	logKeyOnce.Do(func() {
		skey, _, err := note.GenerateKey(rand.Reader, "attestd.test/log")
		if err != nil {
			logKeyErr = err
			return
		}
		logKey, logKeyErr = translog.ParseKey(skey)
	})
	testenv.Must(t, logKeyErr, "log key")
	return translog.Config{Key: logKey, CheckpointInterval: time.Millisecond, Batch: 5000, Poll: 10 * time.Millisecond}
}

// fillLog stores n finalized attestations and a confirmed one, appends every finalized one to
// the log and signs a checkpoint (more than 256 leaves: full tiles exist).
func fillLog(t *testing.T, st *store.Store, agents []seed.Agent, n int) {
	t.Helper()
	ctx := context.Background()
	recs := seed.NewAttestations(agents, n+1, time.Now(), 1<<30, 7)
	for i := range recs {
		recs[i].Commitment = attestation.Finalized
	}
	// One a fork may still drop: no proof yet (409). The newest slot, as
	// on a chain: older slots are final first.
	recs[n].Commitment = attestation.Confirmed
	for _, r := range recs[:n] {
		recs[n].Slot = max(recs[n].Slot, r.Slot+1)
	}
	_, err := st.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply finalized attestations")
	testenv.Must(t, st.SettleLogFrontier(ctx), "settle the log's frontier")
	cfg := logConfig(t)
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Config: cfg, Logger: apptest.Logger()})
	testenv.Must(t, err, "appender")
	for {
		res, err := st.LogAppend(ctx, cfg.Batch)
		testenv.Must(t, err, "log append")
		if res.Leaves+res.Dropped == 0 {
			break
		}
	}
	_, _, err = a.SignCheckpoint(ctx)
	testenv.Must(t, err, "sign checkpoint")
}

// discovery adds x402's discovery documents (/.well-known/x402, jwks.json,
// did.json, llms.txt) as serve does, over a self-settling verifier whose
// chain is never called (discovery needs none).
func discovery(t *testing.T, ledger *store.Store, api *app.API) {
	t.Helper()
	origin, err := config.ParseOrigin("http://attestd.test")
	testenv.Must(t, err, "origin")
	cfg := verifier.Config{PayTo: solana.NewWallet().PublicKey(), Network: x402.Devnet, Asset: x402.Devnet.USDC, Decimals: 6,
		Prices: map[string]uint64{"/premium/full-history/:agentId": 10000, "/premium/forensic-report/:agentId": 50000,
			"/premium/bulk-verify": 20000},
		FeePayer: solana.NewWallet().PrivateKey, RPCURL: "http://127.0.0.1:9", SettleTimeout: time.Second, FacilitatorTimeout: time.Second}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	testenv.Must(t, err, "receipt key")
	signer, err := receipt.NewSigner(key, origin)
	testenv.Must(t, err, "receipt signer")
	v, err := verifier.New(context.Background(), verifier.Deps{Config: cfg, Ledger: ledger, Logger: apptest.Logger(), Receipts: signer})
	testenv.Must(t, err, "verifier")
	t.Cleanup(v.Close)
	ep, err := mcp.Endpoint()
	testenv.Must(t, err, "MCP endpoint")
	d, err := x402fiber.NewDiscovery(v, origin, x402fiber.WithMCP(ep))
	testenv.Must(t, err, "discovery")
	d.Routes(api)
}

// rootOf is node with its requests sent at the origin's root (the
// document's paths with `servers: [{url: /}]`).
func rootOf(node *apptest.Node) *apptest.Node {
	r := *node
	r.URL = node.Root
	return &r
}

// logOriginPaths are the log's operations at its origin (outside /api/v1).
var logOriginPaths = []string{"/log/checkpoint", "/log/tile/0/000", "/log/tile/0/000.p/1", "/log/tile/entries/000", "/log/tile/entries/000.p/1"}

// newRootPaths are the operations served outside /api/v1.
var newRootPaths = []string{"/.well-known/x402", "/.well-known/jwks.json", "/.well-known/did.json", "/llms.txt"}

// driveNewOperations provokes the answers of the explorer, the
// transparency log, the stream, x402 discovery and the webhooks'
// recovery, catalog and rotation.
func driveNewOperations(t *testing.T, node *apptest.Node, adminKey, readKey, agent string) {
	t.Helper()
	admin := map[string]string{"x-api-key": adminKey}
	reader := map[string]string{"x-api-key": readKey}
	send := func(method, path string, body []byte, hdr map[string]string, want int) *apptest.Response {
		t.Helper()
		on := node
		if p, ok := strings.CutPrefix(path, "^"); ok {
			on, path = rootOf(node), p // the log's checkpoint and tiles: at its origin, below the root
		}
		r := on.Do(t, method, path, body, hdr)
		if r.Status != want {
			t.Errorf("%s %s: %d, want %d: %.300s", method, path, r.Status, want, r.Body)
		}
		return r
	}
	etag := func(p string, hdr map[string]string) {
		t.Helper()
		r := send(http.MethodGet, p, nil, hdr, http.StatusOK)
		h := map[string]string{"If-None-Match": r.Header.Get("ETag")}
		for k, v := range hdr {
			h[k] = v
		}
		send(http.MethodGet, p, nil, h, http.StatusNotModified)
	}
	unknown := "11111111111111111111111111111112"

	// x402 discovery, at the root.
	root := rootOf(node)
	for _, p := range newRootPaths {
		if r := root.Get(t, p); r.Status != http.StatusOK {
			t.Errorf("GET %s: %d: %.300s", p, r.Status, r.Body)
		}
	}
	for _, q := range []string{"?limit=1&offset=1", "?type=mcp", "?type=http&limit=2"} {
		if r := root.Get(t, "/.well-known/x402"+q); r.Status != http.StatusOK {
			t.Errorf("a page of /.well-known/x402%s: %d: %.300s", q, r.Status, r.Body)
		}
	}
	if r := root.Get(t, "/.well-known/x402?limit=0"); r.Status != http.StatusBadRequest {
		t.Errorf("/.well-known/x402?limit=0: %d: %.300s", r.Status, r.Body)
	}

	// Explorer: agents, activity, samples.
	for _, p := range []string{"/agents?limit=2", "/stats/activity", "/stats/activity?bucket=day", "/agents/" + agent + "/activity",
		"/samples", "/stats/overview"} {
		etag(p, nil)
	}
	for _, p := range []string{"/agents?limit=0", "/stats/activity?bucket=week", "/agents/" + agent + "/activity?from=x",
		"/agents/not-an-id/activity", "/samples?limit=0", "/stats/overview?x=1", "/agents?operator=x",
		"/attestations?actionHash=xyz", "/attestations?txSignature=abc"} {
		send(http.MethodGet, p, nil, nil, http.StatusBadRequest)
	}
	send(http.MethodGet, "/agents/"+unknown+"/activity", nil, nil, http.StatusNotFound)

	// Transparency log.
	for _, p := range []string{"^/log/checkpoint", "/log/key", "/log/consistency?from=1&to=2", "^/log/tile/0/000",
		"^/log/tile/0/001.p/3", "^/log/tile/entries/000", "^/log/tile/entries/001.p/3"} {
		etag(p, nil)
	}
	for _, p := range []string{"^/log/checkpoint?x=1", "/log/key?x=1", "/log/consistency?from=0&to=1", "^/log/tile/0/abc",
		"^/log/tile/0/000.p/0", "^/log/tile/entries/abc", "^/log/tile/entries/000.p/999"} {
		send(http.MethodGet, p, nil, nil, http.StatusBadRequest)
	}
	for _, p := range []string{"^/log/tile/0/999", "^/log/tile/0/999.p/3", "^/log/tile/entries/999", "^/log/tile/entries/999.p/3"} {
		send(http.MethodGet, p, nil, nil, http.StatusNotFound)
	}
	// Proofs: 200 (and 304) for a finalized logged attestation, 409 for a
	// confirmed one, 400, 404.
	var proved, pending string
	ctx := context.Background()
	testenv.Must(t, node.Store.Pool().QueryRow(ctx,
		`SELECT pda FROM attestations WHERE finalized ORDER BY slot DESC LIMIT 1`).Scan(&proved), "a finalized attestation")
	testenv.Must(t, node.Store.Pool().QueryRow(ctx,
		`SELECT pda FROM attestations WHERE NOT finalized ORDER BY slot DESC LIMIT 1`).Scan(&pending), "a confirmed attestation")
	etag("/attestations/"+proved+"/proof", nil)
	send(http.MethodGet, "/attestations/"+pending+"/proof", nil, nil, http.StatusConflict)
	send(http.MethodGet, "/attestations/not-an-id/proof", nil, nil, http.StatusBadRequest)
	send(http.MethodGet, "/attestations/"+unknown+"/proof", nil, nil, http.StatusNotFound)

	// The stream: 400 on a bad filter, 200 (it ends after its lifetime).
	send(http.MethodGet, "/attestations/stream?agentPda=not-an-id", nil, nil, http.StatusBadRequest)
	send(http.MethodGet, "/attestations/stream?agentPda="+agent, nil, nil, http.StatusOK)

	// Webhooks: the event catalog, recovery, secret rotation.
	etag("/webhooks/event-types", nil)
	send(http.MethodGet, "/webhooks/event-types?x=1", nil, nil, http.StatusBadRequest)
	var hook struct{ Data struct{ ID string } }
	send(http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/r","events":["agent.revoked"]}`), admin, http.StatusCreated).JSON(t, &hook)
	wh := "/webhooks/" + hook.Data.ID
	none := "/webhooks/wh_" + strings.Repeat("0", 24)
	since := []byte(`{"since":"` + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339) + `"}`)
	// A delivery that failed (as workers end one that runs out of
	// attempts): the recovery has one to send again, and stays running
	// (no workers here), so asking again answers it (200).
	var queued struct{ Data struct{ DeliveryID string } }
	send(http.MethodPost, wh+"/test", nil, admin, http.StatusAccepted).JSON(t, &queued)
	testenv.Must(t, node.Store.FailDeliveries(ctx, []string{queued.Data.DeliveryID}), "fail the test delivery")
	var rec struct{ Data struct{ ID string } }
	send(http.MethodPost, wh+"/recover", since, admin, http.StatusAccepted).JSON(t, &rec)
	send(http.MethodPost, wh+"/recover", since, admin, http.StatusOK) // the same window, running (no workers here)
	recovery := wh + "/recoveries/" + rec.Data.ID
	send(http.MethodGet, recovery, nil, admin, http.StatusOK)
	send(http.MethodPost, wh+"/rotate-secret", []byte(`{"overlapSeconds":60}`), admin, http.StatusOK)
	for _, c := range []struct {
		method, path string
		body         []byte
		hdr          map[string]string
		want         int
	}{
		{http.MethodPost, wh + "/recover", []byte(`{"since":"yesterday"}`), admin, http.StatusBadRequest},
		{http.MethodGet, wh + "/recoveries/nope", nil, admin, http.StatusBadRequest},
		{http.MethodPost, wh + "/rotate-secret", []byte(`{"overlapSeconds":-1}`), admin, http.StatusBadRequest},
		{http.MethodPost, wh + "/recover", since, nil, http.StatusUnauthorized},
		{http.MethodGet, recovery, nil, nil, http.StatusUnauthorized},
		{http.MethodPost, wh + "/rotate-secret", []byte(`{}`), nil, http.StatusUnauthorized},
		{http.MethodPost, wh + "/recover", since, reader, http.StatusForbidden},
		{http.MethodGet, recovery, nil, reader, http.StatusForbidden},
		{http.MethodPost, wh + "/rotate-secret", []byte(`{}`), reader, http.StatusForbidden},
		{http.MethodPost, none + "/recover", since, admin, http.StatusNotFound},
		{http.MethodGet, wh + "/recoveries/rcv_" + strings.Repeat("0", 24), nil, admin, http.StatusNotFound},
		{http.MethodPost, none + "/rotate-secret", []byte(`{}`), admin, http.StatusNotFound},
		{http.MethodPost, wh + "/recover", []byte(`{"since":"` + strings.Repeat("x", 20<<10) + `"}`), admin, http.StatusRequestEntityTooLarge},
		{http.MethodPost, wh + "/rotate-secret", []byte(`{"x":"` + strings.Repeat("x", 20<<10) + `"}`), admin, http.StatusRequestEntityTooLarge},
		{http.MethodPost, wh + "/recover", []byte(`since=x`), map[string]string{"x-api-key": adminKey, "Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{http.MethodPost, wh + "/rotate-secret", []byte(`x=1`), map[string]string{"x-api-key": adminKey, "Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		send(c.method, c.path, c.body, c.hdr, c.want)
	}
	// 409 on rotate: two rotations racing (the second one's compare-and-
	// set fails); rounds of concurrent rotations until one loses.
	conflict, rounds := false, 0
	for ; rounds < 20 && !conflict; rounds++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := node.Do(t, http.MethodPost, wh+"/rotate-secret", []byte(`{"overlapSeconds":0}`), admin)
				mu.Lock()
				defer mu.Unlock()
				switch r.Status {
				case http.StatusConflict:
					conflict = true
				case http.StatusOK:
				default:
					t.Errorf("concurrent rotation: %d: %.300s", r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
	}
	if !conflict {
		t.Errorf("no rotation lost the race in 20 rounds of 6")
	}
	t.Logf("a rotation lost the race (409) in round %d of concurrent rotations", rounds)
	// 409 on recover: an inactive webhook.
	send(http.MethodPatch, wh, []byte(`{"active":false}`), admin, http.StatusOK)
	send(http.MethodPost, wh+"/recover", since, admin, http.StatusConflict)
}

// mcpHeader is what an MCP client sends with each message.
var mcpHeader = map[string]string{"Accept": "application/json, text/event-stream"}

// remoteMCP serves the MCP endpoint on api for origin, as serve does.
func remoteMCP(t *testing.T, api *app.API, origin config.Origin) {
	t.Helper()
	res, err := ratelimit.NewIPResolver(nil, "")
	testenv.Must(t, err, "resolver")
	r, err := mcp.NewRemote(mcp.RemoteConfig{Origin: origin, API: &inprocess.Transport{Handler: api.InProcess()},
		ClientIP: res.ClientIP, Logger: apptest.Logger()})
	testenv.Must(t, err, "MCP endpoint")
	api.Page(fiber.MethodPost, mcp.Path, r.Handler())
}

// driveMCP provokes the answers of POST /mcp: a tools/list (the ten
// tools), a paid tool called with an API key as Bearer, a JSON-RPC error,
// a notification; and the refusals before the MCP layer.
func driveMCP(t *testing.T, node *apptest.Node, adminKey, agent string) {
	t.Helper()
	root := rootOf(node)
	post := func(body []byte, hdr map[string]string, want int) *apptest.Response {
		t.Helper()
		h := map[string]string{}
		for k, v := range mcpHeader {
			h[k] = v
		}
		for k, v := range hdr {
			h[k] = v
		}
		r := root.Do(t, http.MethodPost, "/mcp", body, h)
		if r.Status != want {
			t.Errorf("POST /mcp %.80s: %d, want %d: %.300s", body, r.Status, want, r.Body)
		}
		return r
	}
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	post([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), nil, http.StatusOK).JSON(t, &list)
	var names []string
	for _, tool := range list.Result.Tools {
		names = append(names, tool.Name)
	}
	if want := mcp.ToolNames(); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want))) {
		t.Errorf("tools/list on /mcp: %v, want %v", names, want)
	}
	var call struct {
		Result struct{ IsError bool }
	}
	post([]byte(`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"get_forensic_report","arguments":{"agentPda":"`+agent+`"}}}`),
		map[string]string{"Authorization": "Bearer " + adminKey}, http.StatusOK).JSON(t, &call)
	if call.Result.IsError {
		t.Errorf("get_forensic_report with an API key as Bearer: a tool error")
	}
	if r := post([]byte(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`), nil, http.StatusOK); !strings.Contains(string(r.Body), "-32601") {
		t.Errorf("prompts/list: %s", r.Body)
	}
	// Revision 2026-07-28 answers a method the server does not offer with
	// its JSON-RPC error in a 404.
	post([]byte(`{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"drive","version":"1"}}}}`),
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/list"}, http.StatusNotFound)
	post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil, http.StatusAccepted)
	post([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), nil, http.StatusBadRequest)
	post([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), map[string]string{"Authorization": "Basic eDp5"}, http.StatusUnauthorized)
	post([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden)
	post([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("x", 300<<10)+`"}}`), nil, http.StatusRequestEntityTooLarge)
	post([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType)
}

// TestMCPOperationNamesTheTools: the document's POST /mcp names every
// tool of the endpoint, and says which are paid.
func TestMCPOperationNamesTheTools(t *testing.T) {
	doc, err := openapi.Document()
	testenv.Must(t, err, "document")
	op := doc.Paths.Find(mcp.Path).GetOperation(http.MethodPost)
	if op == nil || op.OperationID != "mcp" || len(doc.Paths.Find(mcp.Path).Servers) != 1 || doc.Paths.Find(mcp.Path).Servers[0].URL != "/" {
		t.Fatalf("POST %s: %+v", mcp.Path, op)
	}
	flat := strings.Join(strings.Fields(op.Description), " ")
	for _, name := range mcp.ToolNames() {
		if !strings.Contains(flat, "`"+name+"`") {
			t.Errorf("POST /mcp does not name the tool %s", name)
		}
	}
	paid := "`" + strings.Join(mcp.PremiumTools, "`, `") + "` are paid per call"
	for _, w := range []string{paid, `params._meta["x402/payment"]`, `result._meta["x402/payment-response"]`, "Bearer", "once against the caller's per-IP rate limit"} {
		if !strings.Contains(flat, w) {
			t.Errorf("POST /mcp's description lacks %q", w)
		}
	}
}
