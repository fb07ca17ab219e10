package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPremiumTools calls the premium tools with a key against the real
// premium routes, and with keys the API refuses.
func TestPremiumTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200)
	cs := connect(t, mcp.Config{APIURL: f.node.Root, APIKey: f.key})
	api, err := client.New(f.node.URL)
	testenv.Must(t, err, "client")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stats, err := api.GetAgentStats(ctx, f.agent)
	testenv.Must(t, err, "agent stats")

	for _, tc := range []struct {
		name  string
		tool  string
		args  map[string]any
		check func(t *testing.T, res *mcpsdk.CallToolResult)
	}{
		{"full history", mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var h client.FullHistory
			structured(t, res, &h)
			if int64(len(h.Data)) != stats.TotalAttestations || h.Agent.PDA != f.agent || h.Data[0].PDA != stats.RecentAttestations[0].PDA {
				t.Fatalf("%d records (want %d), agent %s", len(h.Data), stats.TotalAttestations, h.Agent.PDA)
			}
			if !strings.Contains(text(res), "Full history of agent "+f.agent) {
				t.Errorf("text %q", text(res))
			}
		}},
		{"full history page", mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent, "limit": 1, "from": "2000-01-01"},
			func(t *testing.T, res *mcpsdk.CallToolResult) {
				var h client.FullHistory
				structured(t, res, &h)
				if len(h.Data) != 1 || h.Pagination.NextCursor == "" || !strings.Contains(text(res), "cursor="+h.Pagination.NextCursor) {
					t.Fatalf("page %+v; text %q", h.Pagination, text(res))
				}
			}},
		{"forensic report, hash checked", mcp.ToolGetForensicReport, map[string]any{"agentPda": f.agent},
			func(t *testing.T, res *mcpsdk.CallToolResult) {
				var out mcp.ForensicOutput
				structured(t, res, &out)
				r := out.Report
				if !out.ReportHashVerified || out.RecomputedHash != r.ReportHash || r.Summary.Totals.Attestations != stats.TotalAttestations {
					t.Fatalf("report: verified %v, hash %s, recomputed %s, totals %+v", out.ReportHashVerified, r.ReportHash,
						out.RecomputedHash, r.Summary.Totals)
				}
				// The forged attestation's signature failed at ingest.
				if r.Integrity.SignaturesFailed != 1 || r.Summary.AnomalyCounts[client.AnomalyInvalidSignature] != 1 {
					t.Errorf("integrity %+v, anomalies %v", r.Integrity, r.Summary.AnomalyCounts)
				}
				if !strings.Contains(text(res), "verified") || !strings.Contains(text(res), "invalid_signature 1") {
					t.Errorf("text %q", text(res))
				}
			}},
		{"forensic report of a period", mcp.ToolGetForensicReport, map[string]any{"agentPda": f.agent, "from": "2000-01-01", "to": "2000-01-02"},
			func(t *testing.T, res *mcpsdk.CallToolResult) {
				var out mcp.ForensicOutput
				structured(t, res, &out)
				if !out.ReportHashVerified || out.Report.Summary.Totals.Attestations != 0 || out.Report.Period.To == nil {
					t.Fatalf("report %+v %+v", out.Report.Period, out.Report.Summary)
				}
			}},
		{"bulk verify", mcp.ToolBulkVerify, map[string]any{"ids": []string{f.jsonPDA, f.forgedPDA, unknownPDA}},
			func(t *testing.T, res *mcpsdk.CallToolResult) {
				var out client.BulkVerifyResult
				structured(t, res, &out)
				s := out.Summary
				if s.Total != 3 || s.Valid != 1 || s.Invalid != 2 || s.NotFound != 1 || !out.Data[0].Valid || out.Data[1].Valid {
					t.Fatalf("bulk %+v", out)
				}
				if !strings.Contains(text(res), "1 valid, 2 invalid (1 of them not found)") || !strings.Contains(text(res), f.forgedPDA) {
					t.Errorf("text %q", text(res))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, call(t, cs, tc.tool, tc.args)) })
	}

	for _, tc := range []struct {
		name string
		key  string
		tool string
		args map[string]any
		want []string
	}{
		{"revoked key", f.revoked, mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent},
			[]string{"401 UNAUTHORIZED", mcp.EnvAPIKey + " was not accepted"}},
		{"malformed key", "atst_wrong", mcp.ToolBulkVerify, map[string]any{"ids": []string{f.jsonPDA}},
			[]string{"401 UNAUTHORIZED", mcp.EnvAPIKey + " was not accepted"}},
		{"unknown agent", f.key, mcp.ToolGetForensicReport, map[string]any{"agentPda": unknownPDA}, []string{"404 AGENT_NOT_FOUND"}},
		{"history limit over 1000", f.key, mcp.ToolGetFullHistory, map[string]any{"agentPda": f.agent, "limit": 1001}, []string{"limit"}},
		{"bulk over 1000 ids", f.key, mcp.ToolBulkVerify, map[string]any{"ids": repeat(unknownPDA, 1001)}, []string{"ids"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, connect(t, mcp.Config{APIURL: f.node.URL, APIKey: tc.key}), tc.tool, tc.args)
			if !res.IsError {
				t.Fatalf("want a tool error, got %s", text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("error %q lacks %q", text(res), w)
				}
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
