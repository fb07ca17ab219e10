package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool names.
const (
	ToolGetStats          = "get_stats"
	ToolListAttestations  = "list_attestations"
	ToolGetAttestation    = "get_attestation"
	ToolGetAgent          = "get_agent"
	ToolGetAgentStats     = "get_agent_stats"
	ToolVerifyActionHash  = "verify_action_hash"
	ToolListDatasets      = "list_datasets"
	ToolGetFullHistory    = "get_full_history"
	ToolGetForensicReport = "get_forensic_report"
	ToolBulkVerify        = "bulk_verify"
)

// ToolNames lists every tool, public first.
func ToolNames() []string {
	return []string{ToolGetStats, ToolListAttestations, ToolGetAttestation, ToolGetAgent, ToolGetAgentStats,
		ToolVerifyActionHash, ToolListDatasets, ToolGetFullHistory, ToolGetForensicReport, ToolBulkVerify}
}

// PremiumTools are the tools that need ATTESTD_API_KEY.
var PremiumTools = []string{ToolGetFullHistory, ToolGetForensicReport, ToolBulkVerify}

// Inputs. Descriptions become the schema's; patches add ranges and patterns.

// StatsInput takes no arguments.
type StatsInput struct{}

// ListAttestationsInput filters and pages list_attestations.
type ListAttestationsInput struct {
	AgentPDA   string `json:"agentPda,omitempty" jsonschema:"only this agent's attestations: the agent's pda, a base58 Solana address (32-44 characters)"`
	ActionType string `json:"actionType,omitempty" jsonschema:"only this action type: Transaction, Decision, ModelInvocation, ToolCall, ResourceAccess, PolicyCheck or Custom"`
	From       string `json:"from,omitempty" jsonschema:"inclusive lower bound of the timestamp: an RFC 3339 date-time (2026-11-21T10:00:00Z) or a date (2026-11-21, meaning midnight UTC)"`
	To         string `json:"to,omitempty" jsonschema:"exclusive upper bound of the timestamp, same formats as from; from must not be after to"`
	Limit      int    `json:"limit,omitempty" jsonschema:"page size, 1 to 100 (default 20)"`
	Offset     int    `json:"offset,omitempty" jsonschema:"records to skip, 0 to 100000 (default 0); page deeper with cursor"`
	Cursor     string `json:"cursor,omitempty" jsonschema:"pagination.nextCursor of the previous page, passed unchanged, for the next page; not combinable with offset"`
	ActionHash string `json:"actionHash,omitempty" jsonschema:"only attestations of this payload hash: the SHA-256 of the action payload, 64 hexadecimal characters (who attested this payload, and when?)"`
	TxSig      string `json:"txSignature,omitempty" jsonschema:"only attestations recorded by this transaction: its base58 signature (64 bytes)"`
}

// AttestationInput names one attestation.
type AttestationInput struct {
	PDA string `json:"pda" jsonschema:"the attestation's pda, a base58 Solana address (32-44 characters)"`
}

// AgentInput names one agent.
type AgentInput struct {
	AgentPDA string `json:"agentPda" jsonschema:"the agent's pda, a base58 Solana address (32-44 characters), as in attestations' agentPda"`
}

// HistoryInput pages get_full_history.
type HistoryInput struct {
	AgentPDA string `json:"agentPda" jsonschema:"the agent's pda, a base58 Solana address (32-44 characters), as in attestations' agentPda"`
	From     string `json:"from,omitempty" jsonschema:"inclusive lower bound of the timestamp: an RFC 3339 date-time (2026-11-21T10:00:00Z) or a date (2026-11-21, meaning midnight UTC)"`
	To       string `json:"to,omitempty" jsonschema:"exclusive upper bound of the timestamp, same formats as from"`
	Limit    int    `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 1000)"`
	Offset   int    `json:"offset,omitempty" jsonschema:"records to skip (default 0); page deeper with cursor"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"pagination.nextCursor of the previous page, passed unchanged; not combinable with offset"`
}

// ReportInput names the agent and period of get_forensic_report.
type ReportInput struct {
	AgentPDA string `json:"agentPda" jsonschema:"the agent's pda, a base58 Solana address (32-44 characters), as in attestations' agentPda"`
	From     string `json:"from,omitempty" jsonschema:"start of the period (inclusive): an RFC 3339 date-time (2026-11-21T10:00:00Z) or a date (2026-11-21, meaning midnight UTC); default: the agent's first attestation"`
	To       string `json:"to,omitempty" jsonschema:"end of the period (exclusive), same formats as from; default: now"`
}

// BulkVerifyInput lists attestations to verify.
type BulkVerifyInput struct {
	IDs []string `json:"ids" jsonschema:"attestation pdas to verify, 1 to 1000 base58 addresses"`
}

// Outputs that are not client types.

// StatsOutput is get_stats' answer: the counts and the service's health.
type StatsOutput struct {
	Stats  client.Stats   `json:"stats"`
	Health *client.Health `json:"health,omitempty"`
}

// ForensicOutput is get_forensic_report's answer: the report and the check
// of its reportHash made here.
type ForensicOutput struct {
	Report client.ForensicReport `json:"report"`
	// ReportHashVerified says whether reportHash equals the SHA-256 of the
	// RFC 8785 canonical JSON of the report without reportHash, recomputed
	// here from the report as received.
	ReportHashVerified bool   `json:"reportHashVerified"`
	RecomputedHash     string `json:"recomputedHash"`
}

func readOnly(title string) *mcpsdk.ToolAnnotations {
	return &mcpsdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
}

// tool registers one typed tool with schemas refined by inPatch.
func addTool[In, Out any](s *Server, t *mcpsdk.Tool, inPatch func(map[string]*jsonschema.Schema),
	h func(context.Context, In) (Out, string, error)) error {
	in, err := schemaFor[In](inPatch)
	if err != nil {
		return err
	}
	out, err := schemaFor[Out](nil)
	if err != nil {
		return err
	}
	t.InputSchema, t.OutputSchema = in, out
	mcpsdk.AddTool(s.mcp, t, func(ctx context.Context, _ *mcpsdk.CallToolRequest, input In) (*mcpsdk.CallToolResult, Out, error) {
		start := time.Now()
		o, text, err := h(ctx, input)
		if err != nil {
			s.log.Info("tool failed", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds(), "err", err)
			var zero Out
			return nil, zero, err
		}
		s.log.Debug("tool", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds())
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}, o, nil
	})
	return nil
}

func (s *Server) addTools() error {
	errs := []error{
		addTool(s, &mcpsdk.Tool{Name: ToolGetStats, Annotations: readOnly("Global statistics"),
			Description: "Global counts of the index: agents, attestations (total, by action type, last 24 hours), the last indexed slot, " +
				"and the service's health (version, indexer sync)."}, nil, s.getStats),
		addTool(s, &mcpsdk.Tool{Name: ToolListAttestations, Annotations: readOnly("List attestations"),
			Description: "List attestations, newest first, filtered by agent, action type and time range (from inclusive, to exclusive), " +
				"by payload hash (actionHash: who attested this payload?) or by transaction (txSignature). " +
				"Pages of 1-100 (default 20); for the next page pass pagination.nextCursor as cursor."},
			func(p map[string]*jsonschema.Schema) {
				address(p["agentPda"])
				enumActionType(p["actionType"])
				p["actionHash"].Pattern = apiHashPattern
				p["txSignature"].Pattern = signaturePattern
				intRange(p["limit"], 1, 100)
				intRange(p["offset"], 0, 100000)
			}, s.listAttestations),
		addTool(s, &mcpsdk.Tool{Name: ToolGetAttestation, Annotations: readOnly("Get an attestation"),
			Description: "One attestation by its pda: agent, action type, actionHash (SHA-256 of the payload), agent signature, " +
				"transaction, slot, timestamp, commitment; and log: its transparency log proof checked here (the checkpoint's " +
				"Ed25519 signature, the leaf recomputed from the attestation, the inclusion proof): verified at leafIndex of treeSize, " +
				"not_logged, failed with a reason, or unavailable."},
			func(p map[string]*jsonschema.Schema) { address(p["pda"]) }, s.getAttestation),
		addTool(s, &mcpsdk.Tool{Name: ToolGetAgent, Annotations: readOnly("Get an agent"),
			Description: "One agent by its pda: operator, Ed25519 agentId, registration and revocation, metrics " +
				"(attestation count, first/last, last 24h) and policy-root history."},
			func(p map[string]*jsonschema.Schema) { address(p["agentPda"]) }, s.getAgent),
		addTool(s, &mcpsdk.Tool{Name: ToolGetAgentStats, Annotations: readOnly("Agent statistics"),
			Description: "Statistics of one agent: total attestations, a count for every action type, first/last, " +
				"last 24h and 7 days, and its 10 most recent attestations."},
			func(p map[string]*jsonschema.Schema) { address(p["agentPda"]) }, s.getAgentStats),
		addTool(s, &mcpsdk.Tool{Name: ToolVerifyActionHash, Annotations: readOnly("Verify an action payload"),
			Description: "Recompute the SHA-256 of an action payload (its UTF-8 bytes, and its RFC 8785 canonical form when it is JSON) " +
				"and compare it with expectedHash or with the actionHash of the attestation attestationPda; give neither to search the index " +
				"for the attestations that commit to the payload (who attested it, and when: VERIFIED with the matches, or NOT_ATTESTED). " +
				"Answers VERIFIED or MISMATCH with both hashes; with an attestation it also checks the agent's Ed25519 signature over the hash."},
			func(p map[string]*jsonschema.Schema) {
				p["expectedHash"].Pattern = hashPattern
				address(p["attestationPda"])
			}, s.verifyActionHash),
		s.addDatasetsTool(),
		addTool(s, &mcpsdk.Tool{Name: ToolGetFullHistory, Annotations: readOnly("Full history (premium)"),
			Description: s.premiumNote() + "the full attestation history of one agent, newest first, up to 1000 per call, " +
				"with the agent record; optional time range (from inclusive, to exclusive); more with pagination.nextCursor as cursor."},
			func(p map[string]*jsonschema.Schema) {
				address(p["agentPda"])
				intRange(p["limit"], 1, 1000)
				p["offset"].Minimum = ptr(0.0)
			}, s.fullHistory),
		addTool(s, &mcpsdk.Tool{Name: ToolGetForensicReport, Annotations: readOnly("Forensic report (premium)"),
			Description: s.premiumNote() + "a structured audit report on one agent: period, totals by type, daily timeline, " +
				"signature integrity, anomalies (bursts, gaps, activity after revocation, duplicate hashes), policy history; " +
				"its reportHash is recomputed and checked here. Optional period: from (inclusive), to (exclusive)."},
			func(p map[string]*jsonschema.Schema) { address(p["agentPda"]) }, s.forensicReport),
		addTool(s, &mcpsdk.Tool{Name: ToolBulkVerify, Annotations: readOnly("Bulk verify (premium)"),
			Description: s.premiumNote() + "verify 1 to 1000 attestations by pda in one call. Valid means indexed, " +
				"finalized, and the agent's Ed25519 signature over the hash checks out; otherwise a reason is given."},
			func(p map[string]*jsonschema.Schema) {
				ids := p["ids"]
				ids.Type, ids.Types = "array", nil
				ids.MinItems, ids.MaxItems = ptr(1), ptr(client.MaxBulkVerify)
				address(ids.Items)
			}, s.bulkVerify),
	}
	return errors.Join(errs...)
}

// Handlers.

func (s *Server) getStats(ctx context.Context, _ StatsInput) (StatsOutput, string, error) {
	st, err := s.api.Stats(ctx)
	if err != nil {
		return StatsOutput{}, "", s.apiError(err)
	}
	out := StatsOutput{Stats: *st}
	if h, err := s.api.Health(ctx); h != nil {
		out.Health = h
	} else {
		s.log.Info("health unavailable for get_stats", "err", err)
	}
	return out, statsText(out), nil
}

func (s *Server) listAttestations(ctx context.Context, in ListAttestationsInput) (client.AttestationPage, string, error) {
	p := client.ListParams{Limit: in.Limit, Offset: in.Offset, Cursor: in.Cursor, AgentPDA: in.AgentPDA, ActionType: in.ActionType,
		ActionHash: in.ActionHash, TxSignature: in.TxSig}
	var err error
	if p.From, err = parseTime("from", in.From); err != nil {
		return client.AttestationPage{}, "", err
	}
	if p.To, err = parseTime("to", in.To); err != nil {
		return client.AttestationPage{}, "", err
	}
	page, err := s.api.ListAttestations(ctx, p)
	if err != nil {
		return client.AttestationPage{}, "", s.apiError(err)
	}
	return *page, listText(page), nil
}

func (s *Server) getAttestation(ctx context.Context, in AttestationInput) (AttestationOutput, string, error) {
	a, err := s.api.GetAttestation(ctx, in.PDA)
	if err != nil {
		return AttestationOutput{}, "", s.apiError(err)
	}
	l := s.verifyLog(ctx, a)
	return AttestationOutput{Attestation: *a, Log: l}, attestationText(a) + "\n  " + logText(l), nil
}

func (s *Server) getAgent(ctx context.Context, in AgentInput) (client.Agent, string, error) {
	a, err := s.api.GetAgent(ctx, in.AgentPDA)
	if err != nil {
		return client.Agent{}, "", s.apiError(err)
	}
	return *a, agentText(a), nil
}

func (s *Server) getAgentStats(ctx context.Context, in AgentInput) (client.AgentStats, string, error) {
	st, err := s.api.GetAgentStats(ctx, in.AgentPDA)
	if err != nil {
		return client.AgentStats{}, "", s.apiError(err)
	}
	return *st, agentStatsText(st), nil
}

func (s *Server) fullHistory(ctx context.Context, in HistoryInput) (client.FullHistory, string, error) {
	if err := s.needKey(ctx, ToolGetFullHistory); err != nil {
		return client.FullHistory{}, "", err
	}
	p := client.HistoryParams{Limit: in.Limit, Offset: in.Offset, Cursor: in.Cursor}
	var err error
	if p.From, err = parseTime("from", in.From); err != nil {
		return client.FullHistory{}, "", err
	}
	if p.To, err = parseTime("to", in.To); err != nil {
		return client.FullHistory{}, "", err
	}
	var h *client.FullHistory
	cost, err := s.paying(ctx, func(ctx context.Context) (err error) { h, err = s.api.FullHistory(ctx, in.AgentPDA, p); return err })
	if err != nil {
		return client.FullHistory{}, "", s.apiError(err)
	}
	return *h, withCost(fullHistoryText(in.AgentPDA, h), cost), nil
}

func (s *Server) forensicReport(ctx context.Context, in ReportInput) (ForensicOutput, string, error) {
	if err := s.needKey(ctx, ToolGetForensicReport); err != nil {
		return ForensicOutput{}, "", err
	}
	var p client.ReportParams
	var err error
	if p.From, err = parseTime("from", in.From); err != nil {
		return ForensicOutput{}, "", err
	}
	if p.To, err = parseTime("to", in.To); err != nil {
		return ForensicOutput{}, "", err
	}
	var r *client.ForensicReport
	cost, err := s.paying(ctx, func(ctx context.Context) (err error) { r, err = s.api.ForensicReport(ctx, in.AgentPDA, p); return err })
	if err != nil {
		return ForensicOutput{}, "", s.apiError(err)
	}
	sum, ok, err := r.VerifyHash()
	if err != nil {
		return ForensicOutput{}, "", fmt.Errorf("the forensic report could not be checked: %w", err)
	}
	out := ForensicOutput{Report: *r, ReportHashVerified: ok, RecomputedHash: sum}
	return out, withCost(forensicText(in.AgentPDA, &out), cost), nil
}

func (s *Server) bulkVerify(ctx context.Context, in BulkVerifyInput) (client.BulkVerifyResult, string, error) {
	if err := s.needKey(ctx, ToolBulkVerify); err != nil {
		return client.BulkVerifyResult{}, "", err
	}
	var res *client.BulkVerifyResult
	cost, err := s.paying(ctx, func(ctx context.Context) (err error) { res, err = s.api.BulkVerify(ctx, in.IDs); return err })
	if err != nil {
		return client.BulkVerifyResult{}, "", s.apiError(err)
	}
	return *res, withCost(bulkText(res), cost), nil
}

// premiumNote opens a premium tool's description: how it is paid for.
func (s *Server) premiumNote() string {
	if s.remote {
		return "Premium (paid per call: an x402 payment in _meta[\"x402/payment\"], or your attestd API key on the MCP request as Authorization: Bearer or X-API-Key): "
	}
	return "Premium (an API key on this server, or an x402 payment in _meta[\"x402/payment\"]): "
}

// needKey refuses a premium tool without an API key, before any request.
func (s *Server) needKey(ctx context.Context, tool string) error {
	if s.api.HasAPIKey() || s.api.CanPay() || forwarding(ctx) {
		return nil
	}
	return advise(nil, "%s is a premium tool and needs an attestd API key; no request was made. "+
		"API keys look like atst_... and belong to an account of the attestd service: the account holder generates them "+
		"(POST /api/v1/keys with an existing key; on a self-hosted attestd the operator creates an account's first key with "+
		"`attestd keys create --account NAME`). "+
		"Put the key in this tool server's environment as %s (the \"env\" block of the MCP client's configuration) and restart it. "+
		"The public tools (%s) work without a key", tool, EnvAPIKey,
		strings.Join([]string{ToolGetStats, ToolListAttestations, ToolGetAttestation, ToolGetAgent, ToolGetAgentStats, ToolVerifyActionHash,
			ToolListDatasets}, ", "))
}

// apiError turns a client error into the advice a model reads.
func (s *Server) apiError(err error) error {
	e, ok := client.AsAPIError(err)
	if !ok && s.remote {
		// The node's own API, in process: nothing about it is the
		// caller's to fix, and nothing of it is told.
		s.log.Warn("tool call failed inside the node", "err", err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return errors.New("the attestd node did not answer in time; the call may be retried")
		}
		return errors.New("the attestd node could not answer this call; the call may be retried")
	}
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("the attestd API at %s did not answer in time: %w", s.api.BaseURL(), err)
		}
		return fmt.Errorf("could not reach the attestd API at %s (is it running? the address comes from %s): %w",
			s.api.BaseURL(), EnvAPIURL, err)
	}
	head := fmt.Sprintf("attestd API error %d %s: %s", e.Status, e.Code, e.Message)
	switch e.Status {
	case 401:
		if s.remote {
			return advise(err, "%s. The API key sent with this MCP request (Authorization: Bearer or X-API-Key) was not accepted: check it (it may be revoked), or pay per call with x402 instead.", head)
		}
		if s.api.HasAPIKey() {
			return advise(err, "%s. The API key in %s was not accepted: check it (it may be revoked) and restart this server.", head, EnvAPIKey)
		}
		return advise(err, "%s. This call needs an API key in %s.", head, EnvAPIKey)
	case 402:
		if s.remote {
			return advise(err, "%s. This call must be paid for: an x402 payment in _meta[\"x402/payment\"], or your API key on the MCP request.", head)
		}
		if errors.Is(err, client.ErrPaymentRefused) {
			return advise(err, "%s. This tool server did not pay: %s.", head, strings.TrimPrefix(refusal(err), "attestd client: payment not made: "))
		}
		if s.api.CanPay() {
			return advise(err, "%s. The payment was refused or could not be settled, so nothing was charged for an answer; the call may be retried.", head)
		}
		return advise(err, "%s. This call must be paid for: put an API key in %s, or a USDC wallet's keypair file in %s to pay per call.", head, EnvAPIKey, EnvPayer)
	case 404:
		return advise(err, "%s.", head)
	case 429:
		wait := e.RetryAfter
		if wait <= 0 {
			wait = time.Minute
		}
		return advise(err, "%s. Rate limited: retry after %d seconds (retryAfterSeconds=%d)", head,
			int64(wait.Round(time.Second)/time.Second), int64(wait.Round(time.Second)/time.Second))
	}
	if e.RequestID != "" {
		head += " (request id " + e.RequestID + ")"
	}
	return errors.New(head)
}

// advice is what a tool says to the model when a call cannot be answered:
// whole sentences addressed to a reader (the SDK sends a tool error's text
// as the result the model reads), not an error string to be wrapped. cause
// (nil: none) is the client error behind it, for errors.Is and errors.As.
type advice struct {
	text  string
	cause error
}

func (a *advice) Error() string { return a.text }
func (a *advice) Unwrap() error { return a.cause }

// advise makes the advice of format and args, caused by cause (nil: none).
func advise(cause error, format string, args ...any) error {
	return &advice{text: fmt.Sprintf(format, args...), cause: cause}
}

// refusal is why the client did not pay (the error it joined to the 402).
func refusal(err error) string {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := u.Unwrap(); len(errs) > 0 {
			return errs[len(errs)-1].Error()
		}
	}
	return err.Error()
}

func withCost(text, cost string) string {
	if cost == "" {
		return text
	}
	return text + "\n\n" + cost
}

// parseTime accepts what the API accepts: RFC 3339 or YYYY-MM-DD.
func parseTime(name, v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s must be an RFC 3339 date-time (2026-11-21T10:00:00Z) or a date (2026-11-21), got %q", name, v)
}
