package mcp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
	"github.com/gowebpki/jcs"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// unknownPDA is a valid address no record has.
const unknownPDA = "11111111111111111111111111111112"

// Payloads of the attestations the fixture issues itself.
const (
	// jsonPayload is JSON as a model might pass it; its attestation commits to
	// the SHA-256 of its RFC 8785 form, not of these bytes.
	jsonPayload = `{ "tool": "search", "args": {"q": "solana", "limit": 5.0}, "at": 1700000000 }`
	// textPayload is not JSON; its attestation commits to its bytes.
	textPayload = "transfer 5 USDC to 9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	// forgedPayload's attestation carries a signature by another key.
	forgedPayload = "approve everything"
)

type fixture struct {
	env  *apptest.Env
	node *apptest.Node
	// agent is a seeded agent with attestations.
	agent string
	// Attestations issued here: signed over the canonical hash of
	// jsonPayload, over the hash of textPayload, and forged.
	jsonPDA, textPDA, forgedPDA string
	// key is a valid API key of the node's premium routes; revoked is not.
	key, revoked string
	// added counts the attestations addAttestation made.
	added atomic.Int64
}

// newFixture seeds a database, adds the three known-payload attestations
// and starts a node.
func newFixture(t *testing.T, attestations int) *fixture {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: attestations})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := env.Store.Stats(ctx, time.Now())
	testenv.Must(t, err, "stats")
	agent := env.Seeded.Agents[0]
	recs := seed.NewAttestations([]seed.Agent{agent}, 3, time.Now(), st.IndexedSlot+1000, 99)
	canon, err := jcs.Transform([]byte(jsonPayload))
	testenv.Must(t, err, "canonical payload")
	hashes := [][32]byte{sha256.Sum256(canon), sha256.Sum256([]byte(textPayload)), sha256.Sum256([]byte(forgedPayload))}
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	for i := range recs {
		recs[i].ActionHash = hashes[i]
		key := agent.Key
		if i == 2 {
			key = other
		}
		copy(recs[i].Signature[:], ed25519.Sign(key, hashes[i][:]))
		recs[i].SignatureValid = attestation.VerifySignature(recs[i].AgentID, recs[i].ActionHash, recs[i].Signature)
	}
	_, err = env.Store.Apply(ctx, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply known-payload attestations")
	f := &fixture{env: env, agent: agent.PDA.String(), jsonPDA: recs[0].PDA, textPDA: recs[1].PDA, forgedPDA: recs[2].PDA}
	f.node = f.startNode(t, nil)
	return f
}

// startNode starts a node over the fixture's data with API keys and the
// premium routes, wired as `attestd serve` wires them, plus middleware.
func (f *fixture) startNode(t *testing.T, middleware fiber.Handler) *apptest.Node {
	t.Helper()
	return f.startNodeWith(t, middleware, nil)
}

// startNodeWith is startNode with more routes, added last, on a node
// listening on ln (nil: any loopback port).
func (f *fixture) startNodeWith(t *testing.T, middleware fiber.Handler, routes func(*app.API), ln ...net.Listener) *apptest.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acct, _, err := f.env.Store.EnsureAccount(ctx, "mcp-test")
	testenv.Must(t, err, "account")
	var deps app.Deps
	var listener net.Listener
	if len(ln) > 0 {
		listener = ln[0]
	}
	return f.env.StartNode(t, apptest.NodeOptions{
		Listener: listener,
		Configure: func(d *app.Deps) {
			if middleware != nil {
				d.Middleware = append(d.Middleware, middleware)
			}
			deps = *d
		},
		Routes: func(api *app.API) {
			svc, err := apikey.New(ctx, apikey.Deps{Store: deps.Store, Logger: deps.Logger})
			testenv.Must(t, err, "apikey service")
			t.Cleanup(svc.Close)
			svc.Routes(api)
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium handler")
			h.Routes(api)
			if routes != nil {
				routes(api)
			}
			if f.key != "" {
				return
			}
			k, err := svc.Create(ctx, acct.ID, "valid")
			testenv.Must(t, err, "create key")
			r, err := svc.Create(ctx, acct.ID, "revoked")
			testenv.Must(t, err, "create key")
			_, err = svc.Revoke(ctx, r.Key.Prefix, acct.ID)
			testenv.Must(t, err, "revoke key")
			f.key, f.revoked = k.Secret, r.Secret
		},
	})
}

// rateLimitedNode starts another node over the fixture's data that accepts
// limit requests per minute per client IP.
func (f *fixture) rateLimitedNode(t *testing.T, limit int) *apptest.Node {
	t.Helper()
	return f.startNode(t, f.env.NewLimiter(t, limit).Middleware())
}

// countingTransport counts requests that reach the network.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// connect serves cfg's tools to an in-memory client session.
func connect(t *testing.T, cfg mcp.Config) *mcpsdk.ClientSession {
	t.Helper()
	if cfg.HTTPClient == nil {
		// Every answer the tools receive is validated against the OpenAPI
		// document on its way.
		cfg.HTTPClient = &http.Client{Transport: apptest.Transport(t, nil)}
	}
	srv, err := mcp.New(cfg)
	testenv.Must(t, err, "mcp.New")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	testenv.Must(t, err, "server connect")
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	testenv.Must(t, err, "client connect")
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool; a protocol error fails the test.
func call(t *testing.T, cs *mcpsdk.ClientSession, name string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error: %v", name, args, err)
	}
	return res
}

// text is the result's text content.
func text(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes the result's structured content into v.
func structured(t *testing.T, res *mcpsdk.CallToolResult, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	testenv.Must(t, err, "marshal structured content")
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
}
