package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestSeedPrintsItsSamplePayloads: attestd seed prints the attestations
// whose payloads it published, each payload hashing to its actionHash.
func TestSeedPrintsItsSamplePayloads(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t), "ATTESTD_LOG_LEVEL=error"}
	out := runCmd(t, bin, env, "seed", "--agents", "2", "--attestations", "50")
	if !strings.Contains(out, "Sample payloads") {
		t.Fatalf("attestd seed printed no sample payloads:\n%s", out)
	}
	var hashes, payloads []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "actionHash "); ok {
			hashes = append(hashes, strings.TrimSpace(h))
		}
		if p, ok := strings.CutPrefix(line, "payload "); ok {
			payloads = append(payloads, strings.TrimSpace(p))
		}
	}
	if len(hashes) != seed.SampleCount || len(payloads) != seed.SampleCount {
		t.Fatalf("%d hashes and %d payloads printed, want %d:\n%s", len(hashes), len(payloads), seed.SampleCount, out)
	}
	for i := range hashes {
		if got := fmt.Sprintf("%x", sha256.Sum256([]byte(payloads[i]))); got != hashes[i] {
			t.Errorf("sample %d: payload hashes to %s, printed %s", i, got, hashes[i])
		}
	}
}
