package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const seededAttestations = 600

// unknownPDA is a valid address that no record has.
const unknownPDA = "11111111111111111111111111111112"

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	// Every answer is validated against the OpenAPI document on its way
	// (a test's own WithHTTPClient, later in opts, replaces this one).
	opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: apptest.Transport(t, nil)})}, opts...)
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatalf("client.New(%q): %v", url, err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// rateLimitedNode starts a node over env that accepts limit requests per
// minute per client IP (the shared Redis limiter of every node).
func rateLimitedNode(t *testing.T, env *apptest.Env, limit int) *apptest.Node {
	t.Helper()
	lim := env.NewLimiter(t, limit)
	return env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		d.Middleware = append(d.Middleware, lim.Middleware())
	}})
}

func TestPublicRoutes(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 5, Attestations: seededAttestations})
	node := env.StartNode(t, apptest.NodeOptions{})
	c := newClient(t, node.Root) // the root: /api/v1 is added
	agent := env.Seeded.Agents[0].PDA.String()

	first, err := c.ListAttestations(ctx(t), client.ListParams{Limit: 1})
	if err != nil || len(first.Data) != 1 {
		t.Fatalf("first attestation: %v %+v", err, first)
	}
	newest := first.Data[0]

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"health", func(t *testing.T) {
			h, err := c.Health(ctx(t))
			if err != nil || h.Status != "ok" || h.Version == "" || h.Postgres != "ok" {
				t.Fatalf("health: %v %+v", err, h)
			}
		}},
		{"stats", func(t *testing.T) {
			s, err := c.Stats(ctx(t))
			if err != nil || s.Attestations != seededAttestations || s.Agents != 5 || len(s.ByType) != attestation.NumActionTypes {
				t.Fatalf("stats: %v %+v", err, s)
			}
		}},
		{"list default page", func(t *testing.T) {
			p, err := c.ListAttestations(ctx(t), client.ListParams{})
			if err != nil || len(p.Data) != 20 || p.Pagination.Limit != 20 || p.Pagination.Total != seededAttestations || p.Pagination.NextCursor == "" {
				t.Fatalf("list: %v %+v", err, p.Pagination)
			}
			if p.Data[0].PDA != newest.PDA {
				t.Errorf("first of default page %s, want newest %s", p.Data[0].PDA, newest.PDA)
			}
		}},
		{"list clamps limit", func(t *testing.T) {
			p, err := c.ListAttestations(ctx(t), client.ListParams{Limit: 1000, Offset: 5})
			if err != nil || len(p.Data) != 100 || p.Pagination.Limit != 100 || p.Pagination.Offset != 5 {
				t.Fatalf("list: %v %+v", err, p.Pagination)
			}
		}},
		{"list filters", func(t *testing.T) {
			from := newest.Timestamp.Add(-60 * 24 * time.Hour)
			to := newest.Timestamp.Add(-10 * 24 * time.Hour)
			p, err := c.ListAttestations(ctx(t), client.ListParams{Limit: 100, AgentPDA: agent, ActionType: "ToolCall", From: from, To: to})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Data) == 0 {
				t.Fatal("filters matched nothing; the seed should cover them")
			}
			for _, a := range p.Data {
				if a.AgentPDA != agent || a.ActionType != attestation.ToolCall || a.Timestamp.Before(from) || !a.Timestamp.Before(to) {
					t.Errorf("record outside the filters: %+v", a)
				}
			}
		}},
		{"lookups by payload hash and by transaction", func(t *testing.T) {
			byHash, err := c.ListAttestations(ctx(t), client.ListParams{ActionHash: newest.ActionHash})
			if err != nil || len(byHash.Data) == 0 || byHash.Data[0].ActionHash != newest.ActionHash {
				t.Fatalf("by hash: %v %+v", err, byHash)
			}
			byTx, err := c.ListAttestations(ctx(t), client.ListParams{TxSignature: newest.TxSignature, Limit: 100})
			if err != nil || len(byTx.Data) == 0 {
				t.Fatalf("by transaction: %v %+v", err, byTx)
			}
			for _, a := range byTx.Data {
				if a.TxSignature != newest.TxSignature {
					t.Errorf("by transaction: a row of %s", a.TxSignature)
				}
			}
		}},
		{"walk every page by cursor", func(t *testing.T) {
			st, err := c.GetAgentStats(ctx(t), agent)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			var prev *client.Attestation
			for a, err := range c.AllAttestations(ctx(t), client.ListParams{AgentPDA: agent, Limit: 7}) {
				if err != nil {
					t.Fatal(err)
				}
				if seen[a.PDA] {
					t.Fatalf("duplicate %s", a.PDA)
				}
				seen[a.PDA] = true
				if prev != nil && prev.Timestamp.Before(a.Timestamp.Time) {
					t.Fatalf("not newest first: %s then %s", prev.Timestamp, a.Timestamp)
				}
				prev = &a
			}
			if int64(len(seen)) != st.TotalAttestations {
				t.Fatalf("walked %d, agent has %d", len(seen), st.TotalAttestations)
			}
		}},
		{"stop a walk early", func(t *testing.T) {
			n := 0
			for _, err := range c.AllAttestations(ctx(t), client.ListParams{Limit: 3}) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 5 {
					break
				}
			}
			if n != 5 {
				t.Fatalf("got %d", n)
			}
		}},
		{"get attestation", func(t *testing.T) {
			a, err := c.GetAttestation(ctx(t), newest.PDA)
			if err != nil || *a != newest {
				t.Fatalf("get: %v\n got %+v\nwant %+v", err, a, newest)
			}
		}},
		{"get agent", func(t *testing.T) {
			a, err := c.GetAgent(ctx(t), agent)
			if err != nil || a.PDA != agent || a.Metrics.AttestationCount == 0 || len(a.Policies.History) == 0 {
				t.Fatalf("agent: %v %+v", err, a)
			}
		}},
		{"get agent stats", func(t *testing.T) {
			s, err := c.GetAgentStats(ctx(t), agent)
			if err != nil || s.AgentPDA != agent || len(s.ByType) != attestation.NumActionTypes || len(s.RecentAttestations) == 0 {
				t.Fatalf("agent stats: %v %+v", err, s)
			}
			var sum int64
			for _, n := range s.ByType {
				sum += n
			}
			if sum != s.TotalAttestations {
				t.Errorf("byType sums to %d, total %d", sum, s.TotalAttestations)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 50})
	node := env.StartNode(t, apptest.NodeOptions{})
	c := newClient(t, node.URL) // the API base as given
	// This node has no premium routes: their 404s are not answers the
	// document lists, so those calls go around the validating transport.
	bare := newClient(t, node.URL, client.WithHTTPClient(http.DefaultClient))
	keyed := newClient(t, node.URL, client.WithAPIKey("atst_notARealKey"), client.WithHTTPClient(http.DefaultClient))
	agent := env.Seeded.Agents[0].PDA.String()
	for _, tc := range []struct {
		name       string
		call       func(context.Context) error
		status     int
		code       string
		msgContain string
	}{
		{"unknown attestation", func(ctx context.Context) error { _, err := c.GetAttestation(ctx, unknownPDA); return err },
			404, "ATTESTATION_NOT_FOUND", unknownPDA},
		{"unknown agent", func(ctx context.Context) error { _, err := c.GetAgent(ctx, unknownPDA); return err },
			404, "AGENT_NOT_FOUND", unknownPDA},
		{"unknown agent stats", func(ctx context.Context) error { _, err := c.GetAgentStats(ctx, unknownPDA); return err },
			404, "AGENT_NOT_FOUND", ""},
		{"malformed id", func(ctx context.Context) error { _, err := c.GetAttestation(ctx, "not-an-address"); return err },
			400, "INVALID_PARAM", "base58"},
		{"id with a slash stays one segment", func(ctx context.Context) error { _, err := c.GetAgent(ctx, agent+"/stats"); return err },
			400, "INVALID_PARAM", ""},
		{"unknown action type", func(ctx context.Context) error {
			_, err := c.ListAttestations(ctx, client.ListParams{ActionType: "Nope"})
			return err
		}, 400, "INVALID_PARAM", "actionType"},
		{"from after to", func(ctx context.Context) error {
			_, err := c.ListAttestations(ctx, client.ListParams{From: time.Now(), To: time.Now().Add(-time.Hour)})
			return err
		}, 400, "INVALID_PARAM", "from"},
		{"negative limit", func(ctx context.Context) error {
			_, err := c.ListAttestations(ctx, client.ListParams{Limit: -1})
			return err
		}, 400, "INVALID_PARAM", "limit"},
		{"bad cursor", func(ctx context.Context) error {
			_, err := c.ListAttestations(ctx, client.ListParams{Cursor: "garbage"})
			return err
		}, 400, "INVALID_PARAM", "cursor"},
		// Premium routes: no route on a node without the premium feature
		// (premium_test.go tests them on a node with it).
		{"premium full history", func(ctx context.Context) error {
			_, err := bare.FullHistory(ctx, agent, client.HistoryParams{})
			return err
		},
			404, "NOT_FOUND", ""},
		{"premium forensic report", func(ctx context.Context) error {
			_, err := keyed.ForensicReport(ctx, agent, client.ReportParams{})
			return err
		},
			404, "NOT_FOUND", ""},
		{"premium bulk verify", func(ctx context.Context) error { _, err := keyed.BulkVerify(ctx, []string{unknownPDA}); return err },
			404, "NOT_FOUND", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx(t))
			var e *client.APIError
			if !errors.As(err, &e) {
				t.Fatalf("want *APIError, got %T %v", err, err)
			}
			if e.Status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msgContain) || e.RequestID == "" {
				t.Fatalf("got %d %s %q (request %q), want %d %s containing %q", e.Status, e.Code, e.Message, e.RequestID,
					tc.status, tc.code, tc.msgContain)
			}
			if client.StatusOf(err) != tc.status || !strings.Contains(err.Error(), tc.code) {
				t.Errorf("StatusOf %d, Error %q", client.StatusOf(err), err)
			}
		})
	}
}

func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 5})
	node := rateLimitedNode(t, env, 2)
	c := newClient(t, node.URL)
	for i := range 2 {
		if _, err := c.Stats(ctx(t)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, err := c.Stats(ctx(t))
	e, ok := client.AsAPIError(err)
	if !ok || e.Status != http.StatusTooManyRequests || e.Code != "RATE_LIMITED" || e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Fatalf("third request: %T %v (%+v)", err, err, e)
	}
	if !strings.Contains(e.Error(), "retry after") {
		t.Errorf("Error() %q does not say when to retry", e.Error())
	}
}

// TestTransportFailures covers what is not the API: a peer that never
// answers (the default deadline must end the call), a proxy's non-JSON
// error page, nothing listening, and local argument checks.
func TestTransportFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() }) // hold it open, never answer
		}
	}()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}))
	t.Cleanup(proxy.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	closedURL := "http://" + closed.Addr().String()
	closed.Close()

	silent := newClient(t, "http://"+ln.Addr().String(), client.WithTimeout(200*time.Millisecond))
	for _, tc := range []struct {
		name  string
		call  func() error
		check func(error) bool
	}{
		{"default deadline ends a silent call", func() error {
			start := time.Now()
			_, err := silent.Stats(context.Background())
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			return err
		}, func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "GET /stats")
		}},
		{"caller's earlier deadline wins", func() error {
			c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := newClient(t, "http://"+ln.Addr().String()).GetAgent(c, unknownPDA)
			return err
		}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"non-envelope error body", func() error { _, err := newClient(t, proxy.URL).Stats(ctx(t)); return err },
			func(err error) bool {
				e, ok := client.AsAPIError(err)
				return ok && e.Status == 502 && e.Code == "" && strings.Contains(e.Message, "bad gateway")
			}},
		{"connection refused", func() error { _, err := newClient(t, closedURL).Stats(ctx(t)); return err },
			func(err error) bool { _, isAPI := client.AsAPIError(err); return err != nil && !isAPI }},
		{"empty id", func() error { _, err := newClient(t, closedURL).GetAttestation(ctx(t), " "); return err },
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "must not be empty") }},
		{"no ids", func() error { _, err := newClient(t, closedURL).BulkVerify(ctx(t), nil); return err },
			func(err error) bool { return errors.Is(err, client.ErrEmptyIDs) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !tc.check(err) {
				t.Fatalf("unexpected error: %T %v", err, err)
			}
		})
	}
}

func TestNewBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"", "http://127.0.0.1:8080/api/v1", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v1", false},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/api/v1", false},
		{"https://api.example.com/api/v1", "https://api.example.com/api/v1", false},
		{"https://api.example.com/api/v1/", "https://api.example.com/api/v1", false},
		{"https://example.com/attestd", "https://example.com/attestd/api/v1", false},
		{"127.0.0.1:8080", "", true},
		{"ftp://example.com", "", true},
		{"http://", "", true},
		{"http://example.com/?x=1", "", true},
		{"http://exa mple.com", "", true},
	} {
		c, err := client.New(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("New(%q) accepted", tc.in)
			}
			continue
		}
		if err != nil || c.BaseURL() != tc.want {
			t.Errorf("New(%q) = %v, %v; want %s", tc.in, c, err, tc.want)
		}
	}
}
