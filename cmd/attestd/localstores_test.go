package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLocalStoresForOneShotCommands is the README's premium step as a new
// user takes it: `make run` in one terminal, `./bin/attestd keys create`
// in another, with no DATABASE_URL. The command finds the running local's
// stores (from the checkout's root or below it) and says so in one line;
// once local stops, it says what is missing instead. Meanwhile a second
// local in the same directory, a reset, and a local on the taken port are
// refused, each saying why; after the stop, the reset deletes the data,
// the PostgreSQL directory kept outside .run included.
func TestLocalStoresForOneShotCommands(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	dir, err := os.MkdirTemp("", "attestd-local-stores-") // mode 0700, as a mktemp -d checkout
	testenv.Must(t, err, "temp dir")
	t.Cleanup(func() { os.RemoveAll(dir) })
	testenv.Must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/checkout\n"), 0o644), "go.mod")
	sub := filepath.Join(dir, "docs")
	testenv.Must(t, os.Mkdir(sub, 0o755), "mkdir docs")
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	env := func(addr string) []string {
		return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ATTESTD_HTTP_ADDR=" + addr,
			"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR="}
	}
	d := startDaemonIn(t, dir, bin, env(addr), "local", "--agents", "2", "--attestations", "20")
	d.waitFor(t, "attestd local prints its ready banner", 100*time.Millisecond, func() (bool, string) {
		return strings.Contains(d.output.String(), "Ctrl-C"), "no Ctrl-C line in its output"
	})
	logs := d.output.String()
	for _, want := range []string{"http://" + addr + "/", "http://" + addr + "/api/v1/", "keys create", ".run/stores.env", "make reset", "Ctrl-C",
		"chain RPC    http://127.0.0.1:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the ready banner lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "{BurstPerMinute:") {
		t.Errorf("a start-up line dumps a Go struct:\n%s", logs)
	}
	storesFile := filepath.Join(dir, ".run", "stores.env")
	fi, err := os.Stat(storesFile)
	testenv.Must(t, err, "stores.env while local runs")
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("stores.env mode %v, want 0600 (it may carry passwords)", fi.Mode().Perm())
	}

	// The README's step, in a second terminal at the root of the checkout.
	stdout, stderr, code := runCLI(t, bin, dir, nil, "keys", "create", "--account", "demo", "--label", "laptop")
	if code != 0 || !strings.HasPrefix(stdout, "atst_") {
		t.Fatalf("keys create without DATABASE_URL while local runs: exit %d\nstdout: %s\nstderr: %s\nlocal:\n%s", code, stdout, stderr, d.output.String())
	}
	if n := strings.Count(stderr, "stores.env"); n != 1 || !strings.Contains(stderr, "using the stores of the make run in "+dir) {
		t.Errorf("keys create should say once which stores it used (%d mentions):\n%s", n, stderr)
	}
	// Below the checkout's root, the same.
	stdout, stderr, code = runCLI(t, bin, sub, nil, "keys", "list", "--account", "demo")
	if code != 0 || !strings.Contains(stdout, "laptop") {
		t.Errorf("keys list from docs/: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	// Refusals while it runs.
	_, stderr, code = runCLI(t, bin, dir, nil, "local", "--reset")
	if code != 1 || !strings.Contains(stderr, "is running") {
		t.Errorf("local --reset while local runs: exit %d, want 1 saying it runs:\n%s", code, stderr)
	}
	other, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	_, stderr, code = runCLI(t, bin, dir, env(fmt.Sprintf("127.0.0.1:%d", other)), "local", "--agents", "2", "--attestations", "20")
	if code != 1 || !strings.Contains(stderr, "is running in "+filepath.Join(dir, ".run")) {
		t.Errorf("a second local in the same directory: exit %d, want 1 saying one runs:\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, bin, t.TempDir(), env(addr), "local", "--agents", "2", "--attestations", "20")
	if code != 1 || !strings.Contains(stderr, "ATTESTD_HTTP_ADDR") || !strings.Contains(stderr, addr) ||
		strings.Contains(stderr, "serving") {
		t.Errorf("local on a taken port: exit %d, want 1 naming ATTESTD_HTTP_ADDR before serving:\n%s", code, stderr)
	}

	data := dataDir(t, logs)
	d.stop()
	if _, err := os.Stat(storesFile); !os.IsNotExist(err) {
		t.Errorf("stores.env outlives local: %v", err)
	}
	_, stderr, code = runCLI(t, bin, dir, nil, "keys", "list", "--account", "demo")
	if code != 1 || !strings.Contains(stderr, "DATABASE_URL not set") || !strings.Contains(stderr, "make run") {
		t.Errorf("keys list after local stopped: exit %d, want 1 naming DATABASE_URL and make run:\n%s", code, stderr)
	}

	stdout, stderr, code = runCLI(t, bin, dir, nil, "local", "--reset")
	if code != 0 || !strings.Contains(stdout, "deleted") || !strings.Contains(stdout, filepath.Join(dir, ".run")) {
		t.Fatalf("local --reset: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, p := range []string{filepath.Join(dir, ".run"), data} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survives the reset (%v):\n%s", p, err, stdout)
		}
		if !strings.Contains(stdout, p) {
			t.Errorf("the reset does not say it deleted %s:\n%s", p, stdout)
		}
	}
	stdout, _, code = runCLI(t, bin, dir, nil, "local", "--reset")
	if code != 0 || !strings.Contains(stdout, "nothing to delete") {
		t.Errorf("a second reset: exit %d: %s", code, stdout)
	}
}

// TestResetRefusesTheWorkingDirectory: --dir . (or a parent) would delete
// the checkout; it is refused and nothing is deleted.
func TestResetRefusesTheWorkingDirectory(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	dir := t.TempDir()
	keep := filepath.Join(dir, "README.md")
	testenv.Must(t, os.WriteFile(keep, []byte("x"), 0o644), "write")
	for _, arg := range []string{".", ".."} {
		_, stderr, code := runCLI(t, bin, dir, nil, "local", "--reset", "--dir", arg)
		if code != 2 || !strings.Contains(stderr, "refusing to delete") {
			t.Errorf("--dir %s: exit %d, want 2 refusing:\n%s", arg, code, stderr)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the working directory lost a file: %v", err)
	}
}

// TestResetRefusesWhatIsNotARunDirectory: --dir naming a source tree or a
// file (none of the entries local makes) is refused and nothing is
// deleted; a run directory is deleted.
func TestResetRefusesWhatIsNotARunDirectory(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	testenv.Must(t, os.Mkdir(src, 0o755), "mkdir src")
	testenv.Must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644), "write")
	file := filepath.Join(root, "notes.txt")
	testenv.Must(t, os.WriteFile(file, []byte("x"), 0o644), "write")
	for _, p := range []string{src, file} {
		var out strings.Builder
		err := resetLocal(p, &out)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "refusing to delete") {
			t.Errorf("reset --dir %s: %v, want a usage error refusing", p, err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("reset --dir %s deleted it: %v", p, err)
		}
	}
	run := filepath.Join(root, "run")
	testenv.Must(t, os.MkdirAll(filepath.Join(run, "chain"), 0o755), "mkdir run/chain")
	var out strings.Builder
	testenv.Must(t, resetLocal(run, &out), "reset a run directory")
	if _, err := os.Stat(run); !os.IsNotExist(err) || !strings.Contains(out.String(), "deleted") {
		t.Errorf("the run directory survives (%v): %s", err, out.String())
	}
}
