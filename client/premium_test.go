package client_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/x402"
	"github.com/gofiber/fiber/v2"
)

// premiumNode starts a node with API keys and the premium routes, wired as
// `attestd serve` wires them, and returns it with a valid key and a
// revoked one. onMissingKey stands in for a pay-per-request handler.
func premiumNode(t *testing.T, env *apptest.Env, onMissingKey fiber.Handler) (node *apptest.Node, key, revoked string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acct, _, err := env.Store.EnsureAccount(ctx, "client-test")
	testenv.Must(t, err, "account")
	var deps app.Deps
	node = env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			svc, err := apikey.New(ctx, apikey.Deps{Store: deps.Store, Logger: deps.Logger})
			testenv.Must(t, err, "apikey service")
			t.Cleanup(svc.Close)
			svc.Routes(api)
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{OnMissingKey: onMissingKey}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium handler")
			h.Routes(api)
			k, err := svc.Create(ctx, acct.ID, "valid")
			testenv.Must(t, err, "create key")
			r, err := svc.Create(ctx, acct.ID, "revoked")
			testenv.Must(t, err, "create key")
			_, err = svc.Revoke(ctx, r.Key.Prefix, acct.ID)
			testenv.Must(t, err, "revoke key")
			key, revoked = k.Secret, r.Secret
		},
	})
	return node, key, revoked
}

func TestPremiumRoutes(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 300})
	node, key, revoked := premiumNode(t, env, nil)
	c := newClient(t, node.Root, client.WithAPIKey(key))
	agent := env.Seeded.Agents[0].PDA.String()
	stats, err := c.GetAgentStats(ctx(t), agent)
	testenv.Must(t, err, "agent stats")
	recent := stats.RecentAttestations

	t.Run("full history", func(t *testing.T) {
		h, err := c.FullHistory(ctx(t), agent, client.HistoryParams{})
		if err != nil || h.Agent.PDA != agent || int64(len(h.Data)) != stats.TotalAttestations || h.Pagination.Total != stats.TotalAttestations {
			t.Fatalf("history: %v; %d records, agent %s, %+v", err, len(h.Data), h.Agent.PDA, h.Pagination)
		}
		if h.Data[0].PDA != recent[0].PDA {
			t.Errorf("not newest first: %s, want %s", h.Data[0].PDA, recent[0].PDA)
		}
		p, err := c.FullHistory(ctx(t), agent, client.HistoryParams{Limit: 2})
		if err != nil || len(p.Data) != 2 || p.Pagination.NextCursor == "" {
			t.Fatalf("page: %v %+v", err, p)
		}
		p2, err := c.FullHistory(ctx(t), agent, client.HistoryParams{Limit: 2, Cursor: p.Pagination.NextCursor})
		if err != nil || len(p2.Data) != 2 || p2.Data[0].PDA != h.Data[2].PDA {
			t.Fatalf("next page: %v %+v", err, p2)
		}
	})
	t.Run("forensic report verifies", func(t *testing.T) {
		r, err := c.ForensicReport(ctx(t), agent, client.ReportParams{})
		if err != nil {
			t.Fatal(err)
		}
		sum, ok, err := r.VerifyHash()
		if err != nil || !ok {
			t.Fatalf("reportHash %s, recomputed %s: %v", r.ReportHash, sum, err)
		}
		if r.Agent.PDA != agent || r.Summary.Totals.Attestations != stats.TotalAttestations || r.Integrity.SignaturesChecked == 0 ||
			len(r.Summary.ByType) != 7 || r.Thresholds.BurstPerMinute == 0 || len(r.Timeline) == 0 {
			t.Fatalf("report summary %+v integrity %+v", r.Summary, r.Integrity)
		}
		from := recent[0].Timestamp.Add(time.Second) // after the newest: an empty period
		r2, err := c.ForensicReport(ctx(t), agent, client.ReportParams{From: from})
		if err != nil || r2.Period.From == nil || !r2.Period.From.Equal(from) || r2.Summary.Totals.Attestations != 0 {
			t.Fatalf("bounded report: %v %+v %+v", err, r2.Period, r2.Summary)
		}
		if _, ok, _ := r2.VerifyHash(); !ok {
			t.Error("bounded report does not verify")
		}
	})
	t.Run("bulk verify", func(t *testing.T) {
		ids := []string{recent[0].PDA, unknownPDA, recent[1].PDA}
		res, err := c.BulkVerify(ctx(t), ids)
		if err != nil || len(res.Data) != 3 || res.Summary.Total != 3 || res.Summary.Valid != 2 || res.Summary.Invalid != 1 || res.Summary.NotFound != 1 {
			t.Fatalf("bulk: %v %+v", err, res)
		}
		for i, v := range res.Data {
			if v.ID != ids[i] || v.Valid != (ids[i] != unknownPDA) || v.CheckedAt == nil {
				t.Errorf("verdict %d: %+v", i, v)
			}
		}
		if res.Data[0].ActionType != recent[0].ActionType.String() || res.Data[1].Reason != client.ReasonNotFound {
			t.Errorf("verdicts %+v", res.Data)
		}
	})

	for _, tc := range []struct {
		name   string
		c      *client.Client
		call   func(context.Context, *client.Client) error
		status int
		code   string
	}{
		{"no key", newClient(t, node.URL), func(ctx context.Context, c *client.Client) error {
			_, err := c.FullHistory(ctx, agent, client.HistoryParams{})
			return err
		}, 401, "UNAUTHORIZED"},
		{"malformed key", newClient(t, node.URL, client.WithAPIKey("atst_notARealKey")), func(ctx context.Context, c *client.Client) error {
			_, err := c.ForensicReport(ctx, agent, client.ReportParams{})
			return err
		}, 401, "UNAUTHORIZED"},
		{"revoked key", newClient(t, node.URL, client.WithAPIKey(revoked)), func(ctx context.Context, c *client.Client) error {
			_, err := c.BulkVerify(ctx, []string{unknownPDA})
			return err
		}, 401, "UNAUTHORIZED"},
		{"unknown agent", c, func(ctx context.Context, c *client.Client) error {
			_, err := c.FullHistory(ctx, unknownPDA, client.HistoryParams{})
			return err
		}, 404, "AGENT_NOT_FOUND"},
		{"history limit over 1000", c, func(ctx context.Context, c *client.Client) error {
			_, err := c.FullHistory(ctx, agent, client.HistoryParams{Limit: -1})
			return err
		}, 400, "INVALID_PARAM"},
		{"bulk over 1000", c, func(ctx context.Context, c *client.Client) error {
			ids := make([]string, 1001)
			for i := range ids {
				ids[i] = unknownPDA
			}
			_, err := c.BulkVerify(ctx, ids)
			return err
		}, 422, "BATCH_LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx(t), tc.c)
			e, ok := client.AsAPIError(err)
			if !ok || e.Status != tc.status || e.Code != tc.code || e.Message == "" {
				t.Fatalf("got %T %v, want %d %s", err, err, tc.status, tc.code)
			}
		})
	}
}

// TestPaymentRequired: a premium request without a key, on a node whose
// pay-per-request seam answers 402 (a stand-in for the x402 handler), is an
// *APIError carrying the body's payment instructions.
func TestPaymentRequired(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 5})
	instructions := `{"x402Version":2,"accepts":[{"scheme":"exact"}],"error":{"code":"PAYMENT_REQUIRED","message":"pay 0.01 USDC or send x-api-key"}}`
	node, _, _ := premiumNode(t, env, func(c *fiber.Ctx) error {
		c.Status(http.StatusPaymentRequired).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(instructions)
	})
	// The 402 is a double's (partial instructions), not the node's: around
	// the validating transport.
	_, err := newClient(t, node.URL, client.WithHTTPClient(http.DefaultClient)).BulkVerify(ctx(t), []string{unknownPDA})
	e, ok := client.AsAPIError(err)
	if !ok || e.Status != 402 || e.Code != "PAYMENT_REQUIRED" || !strings.Contains(e.Message, "x-api-key") || !strings.Contains(string(e.Body), `"x402Version":2`) {
		t.Fatalf("got %T %v %+v", err, err, e)
	}
}

// deadlines is a transport that records how long each request's context
// had left when it was sent.
type deadlines struct {
	mu   sync.Mutex
	left []time.Duration
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	if dl, ok := r.Context().Deadline(); ok {
		d.mu.Lock()
		d.left = append(d.left, time.Until(dl))
		d.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestDefaultTimeoutCoversASettlement: a client with the defaults gives a
// premium call more time than a server's settlement wait (the paid answer
// comes only after the payment settles, up to x402.DefaultSettleTimeout),
// and waits through a slow answer. The wait is shown on a short hold; the
// deadline is read from the request, without sleeping 20 s.
func TestDefaultTimeoutCoversASettlement(t *testing.T) {
	t.Parallel()
	if margin := client.DefaultTimeout - x402.DefaultSettleTimeout; margin < 10*time.Second {
		t.Fatalf("DefaultTimeout %v leaves %v beyond the settle timeout %v; want at least 10 s", client.DefaultTimeout, margin, x402.DefaultSettleTimeout)
	}
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 5})
	node, _, _ := premiumNode(t, env, func(c *fiber.Ctx) error {
		time.Sleep(300 * time.Millisecond) // a settlement in progress
		c.Status(http.StatusPaymentRequired).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(`{"x402Version":2,"accepts":[],"error":{"code":"PAYMENT_REQUIRED","message":"pay"}}`)
	})
	rec := &deadlines{}
	_, err := newClient(t, node.URL, client.WithHTTPClient(&http.Client{Transport: rec})).BulkVerify(context.Background(), []string{unknownPDA})
	if e, ok := client.AsAPIError(err); !ok || e.Status != http.StatusPaymentRequired {
		t.Fatalf("got %v, want the held 402", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.left) != 1 || rec.left[0] <= x402.DefaultSettleTimeout+10*time.Second {
		t.Fatalf("the call had %v left when sent; want more than the settle timeout %v plus 10 s", rec.left, x402.DefaultSettleTimeout)
	}
}
