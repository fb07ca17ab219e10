package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/hostile"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook/keyring"
)

// TestHostileMatrix runs the hostile matrix against a real `attestd serve`
// process: every route with hostile parameters, paths, bodies, encodings,
// methods and headers, and malformed HTTP. No answer may be a 5xx or a
// non-2xx outside the envelope, and the process must stay under 200 MB of
// peak resident memory.
func TestHostileMatrix(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	redisURL, prefix := testenv.Redis(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"DATABASE_URL=" + testenv.Database(t), "REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=error",
		// Limited like production, but high enough that the matrix is
		// judged on its own answers rather than on 429s.
		"ATTESTD_RATE_LIMIT=1000000",
		"ATTESTD_WEBHOOK_SECRET_KEYS=" + webhookKeys(t),
	}
	runCmd(t, bin, env, "migrate")
	runCmd(t, bin, env, "seed", "--agents", "3", "--attestations", "300")
	key := strings.TrimSpace(runCmd(t, bin, env, "keys", "create", "--account", "hostile"))
	base, pid := serveProcess(t, bin, env)
	var page struct {
		Data []struct{ PDA, AgentPDA string } `json:"data"`
	}
	get(t, base+"/attestations?limit=1", "", "", &page)
	if len(page.Data) != 1 {
		t.Fatal("no attestation to aim at")
	}
	target := hostile.Target{Base: base, APIKey: key, Agent: page.Data[0].AgentPDA, PDA: page.Data[0].PDA,
		Webhook: createWebhook(t, base, key)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := hostile.Run(ctx, target, 8)
	t.Logf("hostile matrix: %s", res)
	for i, f := range res.Failures {
		if i == 30 {
			t.Errorf("... and %d more", len(res.Failures)-30)
			break
		}
		t.Errorf("%s: %d %s: %s", f.Case, f.Status, f.Why, f.Body)
	}
	if peak := peakRSS(t, pid); peak > 200<<20 {
		t.Errorf("peak RSS of the node %d MB, want at most 200", peak>>20)
	} else {
		t.Logf("peak RSS of the node: %d MB", peak>>20)
	}
}

// peakRSS reads a process's high-water resident set size (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	testenv.Must(t, err, "read process status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			testenv.Must(t, err, "parse VmHWM %q", rest)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in process status")
	return 0
}

// webhookKeys is a fresh ATTESTD_WEBHOOK_SECRET_KEYS value.
func webhookKeys(t *testing.T) string {
	spec, err := keyring.Generate("k1")
	testenv.Must(t, err, "webhook key")
	return spec
}

// createWebhook makes a webhook of the key's account and returns its id.
func createWebhook(t *testing.T, base, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks",
		strings.NewReader(`{"url":"https://93.184.216.34/hooks","events":["attestation.created"]}`))
	testenv.Must(t, err, "request")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "create webhook")
	defer res.Body.Close()
	var out struct{ Data struct{ ID string } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated || out.Data.ID == "" {
		t.Fatalf("create webhook: %d %v", res.StatusCode, err)
	}
	return out.Data.ID
}
