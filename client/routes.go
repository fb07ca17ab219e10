package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Health calls GET /health. A service that cannot serve reads answers 503
// with its health body: Health then returns both that body and an *APIError.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	r := request{method: http.MethodGet, path: "/health"}
	status, header, body, err := c.roundTrip(ctx, r)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		return nil, newAPIError(r.method, r.path, status, header, body)
	}
	var h Health
	if err := json.Unmarshal(body, &h); err != nil {
		if status != http.StatusOK {
			return nil, newAPIError(r.method, r.path, status, header, body)
		}
		return nil, fmt.Errorf("attestd client: GET /health: decode response: %w", err)
	}
	if status != http.StatusOK {
		e := newAPIError(r.method, r.path, status, header, body)
		e.Code, e.Message = "UNAVAILABLE", "service status "+h.Status+" (postgres "+h.Postgres+", redis "+h.Redis+")"
		return &h, e
	}
	return &h, nil
}

// Stats calls GET /stats: global agent and attestation counts.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var s Stats
	if err := c.do(ctx, request{method: http.MethodGet, path: "/stats"}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListParams filter and page GET /attestations. Zero values are left out
// (the API's defaults apply).
type ListParams struct {
	// Limit is the page size, 1..100 (the API's default is 20; larger is clamped).
	Limit int
	// Offset skips records, 0..100000. Not combinable with Cursor.
	Offset int
	// Cursor is pagination.nextCursor of the previous page, unchanged.
	Cursor string
	// AgentPDA keeps one agent's attestations (base58 agent pda).
	AgentPDA string
	// ActionType keeps one action type (Transaction, Decision,
	// ModelInvocation, ToolCall, ResourceAccess, PolicyCheck, Custom).
	ActionType string
	// From is the inclusive lower bound of the timestamp.
	From time.Time
	// To is the exclusive upper bound of the timestamp.
	To time.Time
	// ActionHash keeps the attestations of one payload: its SHA-256 in 64
	// hexadecimal characters (see HashPayload). Who attested this payload?
	ActionHash string
	// TxSignature keeps the attestations one transaction recorded (its
	// base58 signature).
	TxSignature string
}

// Values encodes p as the route's query parameters.
func (p ListParams) Values() url.Values {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Offset != 0 {
		q.Set("offset", strconv.Itoa(p.Offset))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if p.AgentPDA != "" {
		q.Set("agentPda", p.AgentPDA)
	}
	if p.ActionType != "" {
		q.Set("actionType", p.ActionType)
	}
	if !p.From.IsZero() {
		q.Set("from", p.From.UTC().Format(time.RFC3339Nano))
	}
	if !p.To.IsZero() {
		q.Set("to", p.To.UTC().Format(time.RFC3339Nano))
	}
	if p.ActionHash != "" {
		q.Set("actionHash", p.ActionHash)
	}
	if p.TxSignature != "" {
		q.Set("txSignature", p.TxSignature)
	}
	return q
}

// ListAttestations calls GET /attestations: one page, newest first.
func (c *Client) ListAttestations(ctx context.Context, p ListParams) (*AttestationPage, error) {
	var page AttestationPage
	if err := c.do(ctx, request{method: http.MethodGet, path: "/attestations", query: p.Values()}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllAttestations walks every attestation matching p, newest first, page by
// page with the keyset cursor (p.Offset and p.Cursor are where it starts;
// p.Limit is the page size, 100 when zero). Each page is one call, under its
// own timeout. It stops at the first error, which it yields.
func (c *Client) AllAttestations(ctx context.Context, p ListParams) iter.Seq2[Attestation, error] {
	return func(yield func(Attestation, error) bool) {
		if p.Limit == 0 {
			p.Limit = 100
		}
		for {
			page, err := c.ListAttestations(ctx, p)
			if err != nil {
				yield(Attestation{}, err)
				return
			}
			for _, a := range page.Data {
				if !yield(a, nil) {
					return
				}
			}
			if page.Pagination.NextCursor == "" || len(page.Data) == 0 {
				return
			}
			p.Cursor, p.Offset = page.Pagination.NextCursor, 0
		}
	}
}

// GetAttestation calls GET /attestations/:id with the attestation's pda.
func (c *Client) GetAttestation(ctx context.Context, pda string) (*Attestation, error) {
	id, err := pathID("attestation pda", pda)
	if err != nil {
		return nil, err
	}
	var body struct {
		Data Attestation `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/attestations/" + id}, &body); err != nil {
		return nil, err
	}
	return &body.Data, nil
}

// GetAgent calls GET /agents/:agentId with the agent's pda.
func (c *Client) GetAgent(ctx context.Context, agentPDA string) (*Agent, error) {
	id, err := pathID("agent pda", agentPDA)
	if err != nil {
		return nil, err
	}
	var body struct {
		Data Agent `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/agents/" + id}, &body); err != nil {
		return nil, err
	}
	return &body.Data, nil
}

// GetAgentStats calls GET /agents/:agentId/stats with the agent's pda.
func (c *Client) GetAgentStats(ctx context.Context, agentPDA string) (*AgentStats, error) {
	id, err := pathID("agent pda", agentPDA)
	if err != nil {
		return nil, err
	}
	var body struct {
		Data AgentStats `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/agents/" + id + "/stats"}, &body); err != nil {
		return nil, err
	}
	return &body.Data, nil
}

// HistoryParams page GET /premium/full-history/:agentId. Zero values are
// left out (the API's defaults apply).
type HistoryParams struct {
	// Limit is the page size, 1..1000 (default 1000).
	Limit int
	// Offset skips records. Not combinable with Cursor.
	Offset int
	// Cursor is pagination.nextCursor of the previous page, unchanged.
	Cursor string
	// From and To bound the timestamp: From <= timestamp < To.
	From, To time.Time
}

// Values encodes p as the route's query parameters.
func (p HistoryParams) Values() url.Values {
	return ListParams{Limit: p.Limit, Offset: p.Offset, Cursor: p.Cursor, From: p.From, To: p.To}.Values()
}

// ReportParams bound a forensic report: From <= timestamp < To (zero: open).
type ReportParams struct {
	From, To time.Time
}

// FullHistory calls GET /premium/full-history/:agentId (API key): a page of
// up to 1000 of the agent's attestations, newest first, with the agent.
func (c *Client) FullHistory(ctx context.Context, agentPDA string, p HistoryParams) (*FullHistory, error) {
	id, err := pathID("agent pda", agentPDA)
	if err != nil {
		return nil, err
	}
	var h FullHistory
	if err := c.do(ctx, request{method: http.MethodGet, path: "/premium/full-history/" + id, query: p.Values()}, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// ForensicReport calls GET /premium/forensic-report/:agentId (API key).
// The report keeps its raw JSON, so VerifyHash can check reportHash.
func (c *Client) ForensicReport(ctx context.Context, agentPDA string, p ReportParams) (*ForensicReport, error) {
	id, err := pathID("agent pda", agentPDA)
	if err != nil {
		return nil, err
	}
	q := ListParams{From: p.From, To: p.To}.Values()
	var body struct {
		Data ForensicReport `json:"data"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/premium/forensic-report/" + id, query: q}, &body); err != nil {
		return nil, err
	}
	return &body.Data, nil
}

// MaxBulkVerify is the most ids one BulkVerify call takes.
const MaxBulkVerify = 1000

// BulkVerify calls POST /premium/bulk-verify (API key) with 1..1000
// attestation pdas.
func (c *Client) BulkVerify(ctx context.Context, ids []string) (*BulkVerifyResult, error) {
	if len(ids) == 0 {
		return nil, ErrEmptyIDs
	}
	var res BulkVerifyResult
	r := request{method: http.MethodPost, path: "/premium/bulk-verify", body: struct {
		IDs []string `json:"ids"`
	}{ids}}
	if err := c.do(ctx, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
