package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolsAndSchemas(t *testing.T) {
	t.Parallel()
	cs := connect(t, mcp.Config{APIURL: "http://127.0.0.1:1"})
	res, err := cs.ListTools(context.Background(), nil)
	testenv.Must(t, err, "list tools")
	byName := map[string]*mcpsdk.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
		if tool.Description == "" || tool.OutputSchema == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: description, output schema and read-only annotation expected: %+v", tool.Name, tool)
		}
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	want := mcp.ToolNames()
	slices.Sort(want)
	if !slices.Equal(names, want) || len(want) != 10 {
		t.Fatalf("tools %v, want the 10 %v", names, want)
	}
	// The schema says what the API accepts.
	prop := func(tool, name string) map[string]any {
		b, _ := json.Marshal(byName[tool].InputSchema)
		var s struct {
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		_ = json.Unmarshal(b, &s)
		if s.Properties[name] == nil {
			t.Fatalf("%s has no input %s: %s", tool, name, b)
		}
		return s.Properties[name]
	}
	for _, tc := range []struct{ tool, prop, key, want string }{
		{mcp.ToolListAttestations, "actionType", "enum", `["Transaction","Decision","ModelInvocation","ToolCall","ResourceAccess","PolicyCheck","Custom"]`},
		{mcp.ToolListAttestations, "limit", "minimum", "1"},
		{mcp.ToolListAttestations, "limit", "maximum", "100"},
		{mcp.ToolListAttestations, "offset", "maximum", "100000"},
		{mcp.ToolListAttestations, "agentPda", "pattern", `"^[1-9A-HJ-NP-Za-km-z]{32,44}$"`},
		{mcp.ToolGetAgent, "agentPda", "pattern", `"^[1-9A-HJ-NP-Za-km-z]{32,44}$"`},
		{mcp.ToolVerifyActionHash, "expectedHash", "pattern", `"^(0[xX])?[0-9a-fA-F]{64}$"`},
		{mcp.ToolBulkVerify, "ids", "maxItems", "1000"},
		{mcp.ToolBulkVerify, "ids", "minItems", "1"},
	} {
		b, _ := json.Marshal(prop(tc.tool, tc.prop)[tc.key])
		if string(b) != tc.want {
			t.Errorf("%s.%s %s = %s, want %s", tc.tool, tc.prop, tc.key, b, tc.want)
		}
	}
	if d, _ := prop(mcp.ToolListAttestations, "from")["description"].(string); !strings.Contains(d, "RFC 3339") || !strings.Contains(d, "2026-11-21") {
		t.Errorf("from's description does not give the formats: %q", d)
	}
}

func TestPublicTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 400)
	cs := connect(t, mcp.Config{APIURL: f.node.Root})
	api, err := client.New(f.node.URL)
	testenv.Must(t, err, "client")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want, err := api.GetAttestation(ctx, f.jsonPDA)
	testenv.Must(t, err, "get attestation")

	for _, tc := range []struct {
		name  string
		tool  string
		args  any
		check func(t *testing.T, res *mcpsdk.CallToolResult)
	}{
		{"stats with health", mcp.ToolGetStats, map[string]any{}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var out mcp.StatsOutput
			structured(t, res, &out)
			if out.Stats.Attestations != 403 || out.Stats.Agents != 3 || out.Health == nil || out.Health.Status != "ok" {
				t.Fatalf("stats %+v", out)
			}
			if !strings.Contains(text(res), "403 attestations") {
				t.Errorf("text %q", text(res))
			}
		}},
		{"list with filters", mcp.ToolListAttestations, map[string]any{"agentPda": f.agent, "actionType": "ToolCall", "limit": 5,
			"from": "2000-01-01", "to": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
			func(t *testing.T, res *mcpsdk.CallToolResult) {
				var page client.AttestationPage
				structured(t, res, &page)
				if len(page.Data) == 0 || len(page.Data) > 5 || page.Pagination.Limit != 5 {
					t.Fatalf("page %+v", page.Pagination)
				}
				for _, a := range page.Data {
					if a.AgentPDA != f.agent || a.ActionType != attestation.ToolCall {
						t.Errorf("outside the filters: %+v", a)
					}
				}
				if !strings.Contains(text(res), page.Data[0].PDA) {
					t.Errorf("text lacks the records: %q", text(res))
				}
			}},
		{"list by cursor", mcp.ToolListAttestations, map[string]any{"limit": 2}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var p1 client.AttestationPage
			structured(t, res, &p1)
			if p1.Pagination.NextCursor == "" || !strings.Contains(text(res), "cursor="+p1.Pagination.NextCursor) {
				t.Fatalf("no next cursor: %+v %q", p1.Pagination, text(res))
			}
			var p2 client.AttestationPage
			structured(t, call(t, cs, mcp.ToolListAttestations, map[string]any{"limit": 2, "cursor": p1.Pagination.NextCursor}), &p2)
			if len(p2.Data) != 2 || p2.Data[0].PDA == p1.Data[0].PDA || p2.Data[0].PDA == p1.Data[1].PDA {
				t.Fatalf("second page %+v after %+v", p2.Data, p1.Data)
			}
		}},
		{"attestation", mcp.ToolGetAttestation, map[string]any{"pda": f.jsonPDA}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var a client.Attestation
			structured(t, res, &a)
			if a != *want || !strings.Contains(text(res), a.ActionHash) {
				t.Fatalf("got %+v, want %+v; text %q", a, want, text(res))
			}
		}},
		{"agent", mcp.ToolGetAgent, map[string]any{"agentPda": f.agent}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var a client.Agent
			structured(t, res, &a)
			if a.PDA != f.agent || a.Metrics.AttestationCount == 0 || !strings.Contains(text(res), f.agent) {
				t.Fatalf("agent %+v", a)
			}
		}},
		{"agent stats", mcp.ToolGetAgentStats, map[string]any{"agentPda": f.agent}, func(t *testing.T, res *mcpsdk.CallToolResult) {
			var s client.AgentStats
			structured(t, res, &s)
			if s.AgentPDA != f.agent || len(s.ByType) != attestation.NumActionTypes || len(s.RecentAttestations) == 0 {
				t.Fatalf("stats %+v", s)
			}
			if !strings.Contains(text(res), "By type: Transaction") {
				t.Errorf("text %q", text(res))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, call(t, cs, tc.tool, tc.args)) })
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestVerifyActionHash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20)
	cs := connect(t, mcp.Config{APIURL: f.node.URL})
	canon := `{"args":{"limit":5,"q":"solana"},"at":1700000000,"tool":"search"}`
	for _, tc := range []struct {
		name      string
		args      map[string]any
		result    string
		form      string
		signature *bool // nil: no attestation in the answer
		text      string
	}{
		{"JSON payload, canonical form matches the attestation", map[string]any{"payload": jsonPayload, "attestationPda": f.jsonPDA},
			mcp.Verified, mcp.FormCanonical, ptr(true), "signature over the attested hash is valid"},
		{"text payload matches the attestation", map[string]any{"payload": textPayload, "attestationPda": f.textPDA},
			mcp.Verified, mcp.FormRaw, ptr(true), "VERIFIED"},
		{"other payload does not", map[string]any{"payload": textPayload + ".", "attestationPda": f.textPDA},
			mcp.Mismatch, "", ptr(true), "MISMATCH"},
		{"hash matches, signature forged", map[string]any{"payload": forgedPayload, "attestationPda": f.forgedPDA},
			mcp.Verified, mcp.FormRaw, ptr(false), "does NOT verify"},
		{"expected hash with 0x and upper case", map[string]any{"payload": textPayload, "expectedHash": "0x" + strings.ToUpper(sha(textPayload))},
			mcp.Verified, mcp.FormRaw, nil, sha(textPayload)},
		{"expected hash of the canonical form", map[string]any{"payload": jsonPayload, "expectedHash": sha(canon)},
			mcp.Verified, mcp.FormCanonical, nil, "RFC 8785"},
		{"expected hash mismatch shows both", map[string]any{"payload": "x", "expectedHash": sha("y")},
			mcp.Mismatch, "", nil, sha("x")},
		// No reference: the index is searched for the payload.
		{"search finds the text payload's attestation", map[string]any{"payload": textPayload},
			mcp.Verified, mcp.FormRaw, nil, f.textPDA},
		{"search finds a JSON payload by its canonical form", map[string]any{"payload": jsonPayload},
			mcp.Verified, mcp.FormCanonical, nil, f.jsonPDA},
		{"search of an unknown payload", map[string]any{"payload": "never attested"},
			mcp.NotAttested, "", nil, "NOT_ATTESTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, mcp.ToolVerifyActionHash, tc.args)
			var out mcp.VerifyOutput
			structured(t, res, &out)
			if out.Result != tc.result || out.MatchedForm != tc.form || !strings.Contains(text(res), tc.text) {
				t.Fatalf("got %+v\ntext %q", out, text(res))
			}
			if out.ExpectedHash == "" || out.PayloadHash != sha(tc.args["payload"].(string)) {
				t.Errorf("hashes: %+v", out)
			}
			if (tc.signature == nil) != (out.Attestation == nil) || tc.signature != nil && out.Attestation.SignatureValid != *tc.signature {
				t.Errorf("attestation signature: %+v, want %v", out.Attestation, tc.signature)
			}
			if _, searched := tc.args["expectedHash"]; !searched && tc.args["attestationPda"] == nil {
				want := map[string]string{mcp.Verified: tc.text}[tc.result]
				if want != "" && (out.Matched != 1 || len(out.Matches) != 1 || out.Matches[0].PDA != want || !out.Matches[0].SignatureValid) {
					t.Errorf("search matches %d %+v, want %s with a valid signature", out.Matched, out.Matches, want)
				}
				if want == "" && (out.Matched != 0 || len(out.Matches) != 0) {
					t.Errorf("search of an unknown payload matched %+v", out.Matches)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestToolErrors: bad input is refused before any request; API errors come
// back as tool errors (isError) carrying the API's message.
func TestToolErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20)
	cs := connect(t, mcp.Config{APIURL: f.node.Root})
	down := connect(t, mcp.Config{APIURL: "http://127.0.0.1:1", Timeout: time.Second})
	for _, tc := range []struct {
		name string
		cs   *mcpsdk.ClientSession
		tool string
		args map[string]any
		want []string // all in the error text
	}{
		{"unknown attestation", cs, mcp.ToolGetAttestation, map[string]any{"pda": unknownPDA}, []string{"404 ATTESTATION_NOT_FOUND", unknownPDA}},
		{"unknown agent", cs, mcp.ToolGetAgent, map[string]any{"agentPda": unknownPDA}, []string{"404 AGENT_NOT_FOUND"}},
		{"unknown agent stats", cs, mcp.ToolGetAgentStats, map[string]any{"agentPda": unknownPDA}, []string{"404 AGENT_NOT_FOUND"}},
		{"verify against unknown attestation", cs, mcp.ToolVerifyActionHash, map[string]any{"payload": "x", "attestationPda": unknownPDA},
			[]string{"404 ATTESTATION_NOT_FOUND"}},
		{"from after to (the API's 400)", cs, mcp.ToolListAttestations, map[string]any{"from": "2026-11-21", "to": "2026-11-01"},
			[]string{"400 INVALID_PARAM", "from must not be after to"}},
		{"limit out of range", cs, mcp.ToolListAttestations, map[string]any{"limit": 0}, []string{"limit"}},
		{"limit too large", cs, mcp.ToolListAttestations, map[string]any{"limit": 101}, []string{"limit"}},
		{"unknown action type", cs, mcp.ToolListAttestations, map[string]any{"actionType": "Nope"}, []string{"actionType"}},
		{"unparsable date", cs, mcp.ToolListAttestations, map[string]any{"from": "yesterday"}, []string{"from must be an RFC 3339", "2026-11-21"}},
		{"malformed pda", cs, mcp.ToolGetAttestation, map[string]any{"pda": "not-an-address!"}, []string{"pda"}},
		{"missing pda", cs, mcp.ToolGetAttestation, map[string]any{}, []string{"pda"}},
		{"unknown argument", cs, mcp.ToolGetAgent, map[string]any{"agentPda": f.agent, "extra": 1}, []string{"extra"}},
		{"verify takes one reference", cs, mcp.ToolVerifyActionHash, map[string]any{"payload": "x", "expectedHash": sha("x"), "attestationPda": f.textPDA},
			[]string{"exactly one of expectedHash"}},
		{"verify malformed hash", cs, mcp.ToolVerifyActionHash, map[string]any{"payload": "x", "expectedHash": "abc"}, []string{"expectedHash"}},
		{"bulk verify without ids", cs, mcp.ToolBulkVerify, map[string]any{"ids": []string{}}, []string{"ids"}},
		{"API unreachable", down, mcp.ToolGetStats, map[string]any{}, []string{"could not reach the attestd API at http://127.0.0.1:1/api/v1", mcp.EnvAPIURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, tc.cs, tc.tool, tc.args)
			if !res.IsError || res.StructuredContent != nil {
				t.Fatalf("want a tool error, got %+v: %s", res, text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("error %q lacks %q", text(res), w)
				}
			}
		})
	}
}

func TestPremiumWithoutKeyMakesNoRequest(t *testing.T) {
	t.Parallel()
	counter := &countingTransport{}
	cs := connect(t, mcp.Config{APIURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: counter}})
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{mcp.ToolGetFullHistory, map[string]any{"agentPda": unknownPDA}},
		{mcp.ToolGetForensicReport, map[string]any{"agentPda": unknownPDA}},
		{mcp.ToolBulkVerify, map[string]any{"ids": []string{unknownPDA}}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			msg := text(res)
			if !res.IsError || !strings.Contains(msg, "premium tool") || !strings.Contains(msg, mcp.EnvAPIKey) ||
				!strings.Contains(msg, "no request was made") || !strings.Contains(msg, "attestd keys create") {
				t.Fatalf("got %+v: %q", res, msg)
			}
		})
	}
	if n := counter.n.Load(); n != 0 {
		t.Fatalf("%d requests made without a key", n)
	}
}

func TestRateLimitedIsAToolErrorWithRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10)
	node := f.rateLimitedNode(t, 1)
	cs := connect(t, mcp.Config{APIURL: node.URL})
	if res := call(t, cs, mcp.ToolGetAgent, map[string]any{"agentPda": f.agent}); res.IsError {
		t.Fatalf("first call: %s", text(res))
	}
	res := call(t, cs, mcp.ToolGetAgent, map[string]any{"agentPda": f.agent})
	if !res.IsError || !strings.Contains(text(res), "429 RATE_LIMITED") || !strings.Contains(text(res), "retry after") {
		t.Fatalf("second call: %+v %q", res, text(res))
	}
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10)
	srv, err := mcp.New(mcp.Config{APIURL: f.node.Root})
	testenv.Must(t, err, "mcp.New")
	addr, err := mcp.ListenAddr(":0")
	testenv.Must(t, err, "listen addr")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("a bare port listens on %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	testenv.Must(t, err, "listen")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	cs, err := c.Connect(cctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp",
		DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	testenv.Must(t, err, "connect over HTTP")
	defer cs.Close()
	var a client.Attestation
	structured(t, call(t, cs, mcp.ToolGetAttestation, map[string]any{"pda": f.textPDA}), &a)
	if a.PDA != f.textPDA || a.ActionHash != sha(textPayload) {
		t.Fatalf("over HTTP: %+v", a)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want mcp.Config
		bad  bool
	}{
		{map[string]string{}, mcp.Config{APIURL: client.DefaultBaseURL}, false},
		{map[string]string{mcp.EnvAPIURL: " https://api.example.com ", mcp.EnvAPIKey: "atst_x\n", mcp.EnvAPITimeout: "3s"},
			mcp.Config{APIURL: "https://api.example.com", APIKey: "atst_x", Timeout: 3 * time.Second}, false},
		{map[string]string{mcp.EnvAPITimeout: "soon"}, mcp.Config{}, true},
		{map[string]string{mcp.EnvAPITimeout: "-1s"}, mcp.Config{}, true},
	} {
		got, err := mcp.ConfigFromEnv(func(k string) string { return tc.env[k] })
		if tc.bad != (err != nil) || !tc.bad && (got.APIURL != tc.want.APIURL || got.APIKey != tc.want.APIKey || got.Timeout != tc.want.Timeout) {
			t.Errorf("%v: got %+v, %v", tc.env, got, err)
		}
	}
	if _, err := mcp.New(mcp.Config{APIURL: "localhost:8080"}); err == nil || !strings.Contains(err.Error(), mcp.EnvAPIURL) {
		t.Errorf("a bad URL: %v", err)
	}
	for _, tc := range []struct{ in, want string }{{":0", "127.0.0.1:0"}, {":8090", "127.0.0.1:8090"},
		{"0.0.0.0:8090", "0.0.0.0:8090"}, {"localhost:1", "localhost:1"}} {
		if got, err := mcp.ListenAddr(tc.in); err != nil || got != tc.want {
			t.Errorf("ListenAddr(%q) = %q, %v", tc.in, got, err)
		}
	}
	if _, err := mcp.ListenAddr("8090"); err == nil {
		t.Error("ListenAddr accepted a bare number")
	}
}
