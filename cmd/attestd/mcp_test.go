package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeAnswersMCP: `attestd serve` answers MCP at /mcp on its own
// listener, for its loopback origin under any loopback name, and refuses a
// foreign Origin; a node with no public origin says the endpoint is off.
func TestServeAnswersMCP(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	_, chainEnv := startChain(t, devnet.Config{Agents: 1, Attestations: 5})
	redisURL, prefix := testenv.Redis(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t),
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn"}, chainEnv...)
	runCmd(t, bin, env, "migrate")
	base := serveNode(t, bin, env)
	root := strings.TrimSuffix(base, "/api/v1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, endpoint := range []string{root + mcp.Path, strings.Replace(root, "127.0.0.1", "localhost", 1) + mcp.Path} {
		cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "serve-test", Version: "v0"}, nil).Connect(ctx,
			&mcpsdk.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		testenv.Must(t, err, "connect to %s", endpoint)
		tools, err := cs.ListTools(ctx, nil)
		testenv.Must(t, err, "list tools at %s", endpoint)
		if len(tools.Tools) != len(mcp.ToolNames()) {
			t.Errorf("%s lists %d tools, want %d", endpoint, len(tools.Tools), len(mcp.ToolNames()))
		}
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: mcp.ToolGetStats, Arguments: map[string]any{}})
		testenv.Must(t, err, "get_stats at %s", endpoint)
		if res.IsError || res.StructuredContent == nil {
			t.Errorf("get_stats at %s: %+v", endpoint, res.Content)
		}
		cs.Close()
	}
	status, body := postMCP(t, root+mcp.Path, map[string]string{"Origin": "https://evil.example"})
	if status != http.StatusForbidden || !strings.Contains(body, "FORBIDDEN") {
		t.Errorf("a foreign Origin: %d %s", status, body)
	}

	// Listening beyond loopback without ATTESTD_PUBLIC_URL: no origin to
	// check Host and Origin against, so no endpoint.
	t.Run("no public origin", func(t *testing.T) {
		p, err := devstack.FreePort()
		testenv.Must(t, err, "free port")
		port := strconv.Itoa(p)
		startDaemon(t, bin, append(env, "ATTESTD_HTTP_ADDR=0.0.0.0:"+port), "serve")
		url := "http://127.0.0.1:" + port + mcp.Path
		testenv.WaitForState(t, "the node answers", testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
			resp, err := http.Get("http://127.0.0.1:" + port + "/api/v1/health")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return true, ""
		}))
		if status, body := postMCP(t, url, nil); status != http.StatusServiceUnavailable || !strings.Contains(body, "ATTESTD_PUBLIC_URL") {
			t.Errorf("without a public origin: %d %s", status, body)
		}
	})
}

// postMCP posts a tools/list with header and returns the status and body.
func postMCP(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	testenv.Must(t, err, "request")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "post %s", url)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
