package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var npmMu sync.Mutex

// NodeModules installs the npm packages locked in dir (package.json and
// package-lock.json, committed beside the test that needs them) with
// `npm ci`, once per lock file content on this machine, and returns the
// node_modules directory. Installs are cached under the user cache
// directory, so only the first run of a lock file downloads anything.
// Node.js and npm must be installed; a missing one fails the test with
// what to install.
func NodeModules(tb testing.TB, dir string) string {
	tb.Helper()
	npmMu.Lock()
	defer npmMu.Unlock()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Fatalf("%s is not installed; this test runs a Node.js tool (apt-get install nodejs npm)", tool)
		}
	}
	pkg, err := os.ReadFile(filepath.Join(dir, "package.json"))
	Must(tb, err, "read %s/package.json", dir)
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	Must(tb, err, "read %s/package-lock.json", dir)
	sum := sha256.Sum256(append(pkg, lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	target := filepath.Join(base, "attestd-npm", hex.EncodeToString(sum[:8]))
	modules := filepath.Join(target, "node_modules")
	if _, err := os.Stat(filepath.Join(target, ".complete")); err == nil {
		return modules
	}
	Must(tb, os.RemoveAll(target), "clear %s", target)
	Must(tb, os.MkdirAll(target, 0o755), "create %s", target)
	Must(tb, os.WriteFile(filepath.Join(target, "package.json"), pkg, 0o644), "copy package.json")
	Must(tb, os.WriteFile(filepath.Join(target, "package-lock.json"), lock, 0o644), "copy package-lock.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = target
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s (for %s): %v\n%s", target, dir, err, out)
	}
	Must(tb, os.WriteFile(filepath.Join(target, ".complete"), []byte(fmt.Sprint(time.Now())), 0o644), "mark install")
	return modules
}
