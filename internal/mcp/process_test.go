package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv is the environment of a spawned `attestd mcp`.
func childEnv(apiURL, key string) []string {
	env := []string{"ATTESTD_API_URL=" + apiURL, "ATTESTD_LOG_LEVEL=debug", "PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	if key != "" {
		env = append(env, "ATTESTD_API_KEY="+key)
	}
	return env
}

// TestProcess runs the built binary as a desktop client would: `attestd mcp`
// on stdio (stdout must carry nothing but the protocol), and
// `attestd mcp --http 127.0.0.1:0` for one round trip over HTTP.
func TestProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30)
	bin := testenv.BuildAttestd(t)

	t.Run("stdio", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(bin, "mcp")
		cmd.Env = childEnv(f.node.Root, "")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
		testenv.Must(t, err, "connect to attestd mcp")
		tools, err := cs.ListTools(ctx, nil)
		testenv.Must(t, err, "list tools")
		if len(tools.Tools) != len(mcp.ToolNames()) {
			t.Errorf("%d tools", len(tools.Tools))
		}
		var a client.Attestation
		structured(t, call(t, cs, mcp.ToolGetAttestation, map[string]any{"pda": f.jsonPDA}), &a)
		var v mcp.VerifyOutput
		structured(t, call(t, cs, mcp.ToolVerifyActionHash, map[string]any{"payload": jsonPayload, "attestationPda": f.jsonPDA}), &v)
		if a.PDA != f.jsonPDA || v.Result != mcp.Verified || v.Attestation == nil || !v.Attestation.SignatureValid {
			t.Errorf("attestation %+v, verify %+v", a, v)
		}
		if res := call(t, cs, mcp.ToolGetAgent, map[string]any{"agentPda": unknownPDA}); !res.IsError || !strings.Contains(text(res), "AGENT_NOT_FOUND") {
			t.Errorf("unknown agent: %q", text(res))
		}
		if res := call(t, cs, mcp.ToolBulkVerify, map[string]any{"ids": []string{f.jsonPDA}}); !res.IsError || !strings.Contains(text(res), mcp.EnvAPIKey) {
			t.Errorf("premium without key: %q", text(res))
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		// Logs went to stderr, as JSON lines.
		if !strings.Contains(stderr.String(), `"mcp serving on stdio"`) {
			t.Errorf("stderr: %s", stderr.String())
		}
	})

	t.Run("stdio with a key", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(bin, "mcp")
		cmd.Env = childEnv(f.node.URL, f.key)
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
		testenv.Must(t, err, "connect to attestd mcp")
		defer cs.Close()
		var out client.BulkVerifyResult
		structured(t, call(t, cs, mcp.ToolBulkVerify, map[string]any{"ids": []string{f.jsonPDA, f.textPDA}}), &out)
		if out.Summary.Valid != 2 {
			t.Fatalf("bulk verify %+v", out)
		}
	})

	t.Run("http", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		endpoint := serveHTTP(t, bin, childEnv(f.node.Root, ""))
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		testenv.Must(t, err, "connect over HTTP")
		defer cs.Close()
		var out mcp.StatsOutput
		structured(t, call(t, cs, mcp.ToolGetStats, map[string]any{}), &out)
		if out.Stats.Attestations != 33 {
			t.Fatalf("stats over HTTP: %+v", out.Stats)
		}
	})
}

// serveHTTP runs `attestd mcp --http :0` with env, as an operator serves
// the tools to remote clients, and returns the endpoint it logged. The
// process is stopped (SIGINT) when the test ends, and must exit cleanly.
func serveHTTP(t *testing.T, bin string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--http", ":0")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	testenv.Must(t, err, "stderr pipe")
	testenv.Must(t, cmd.Start(), "start attestd mcp --http")
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("attestd mcp --http exited: %v", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("attestd mcp --http did not stop on SIGINT")
		}
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.URL != "" {
				url <- line.URL
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-ctx.Done():
		t.Fatal("attestd mcp --http logged no URL")
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("listening on %s, want 127.0.0.1", endpoint)
	}
	return endpoint
}
