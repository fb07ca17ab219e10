package openapi

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestDocumentLintsClean runs a strict OpenAPI linter (redocly, every rule
// of its recommended set with warnings counted as errors) on the contract:
// the document users read must have no errors and no warnings.
func TestDocumentLintsClean(t *testing.T) {
	modules := testenv.NodeModules(t, filepath.Join("testdata", "lint"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(modules, "@redocly", "cli", "bin", "cli.js"),
		"lint", "--config", filepath.Join("testdata", "lint", "redocly.yaml"), "--format", "stylish", "openapi.yaml")
	cmd.Env = append(cmd.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openapi.yaml does not lint clean (%v):\n%s", err, out)
	}
}
