package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestKeysCLIRoles: `attestd keys create` makes admin keys unless told
// --role read, refuses other roles, and `keys list` shows each key's role.
func TestKeysCLIRoles(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	redisURL, prefix := testenv.Redis(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t),
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_LOG_LEVEL=warn"}
	runCmd(t, bin, env, "migrate")
	admin := strings.TrimSpace(runCmd(t, bin, env, "keys", "create", "--account", "acme", "--label", "ops"))
	read := strings.TrimSpace(runCmd(t, bin, env, "keys", "create", "--account", "acme", "--label", "ci", "--role", "read"))
	explicit := strings.TrimSpace(runCmd(t, bin, env, "keys", "create", "--account", "acme", "--role", "admin"))
	prefixOf := func(k string) string { return k[len("atst_") : len("atst_")+8] }

	roles := map[string]string{}
	lines := strings.Split(strings.TrimSpace(runCmd(t, bin, env, "keys", "list", "--account", "acme")), "\n")
	if h := strings.Fields(lines[0]); len(h) < 2 || h[0] != "PREFIX" || h[1] != "ROLE" {
		t.Fatalf("list header %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		roles[f[0]] = f[1]
	}
	want := map[string]string{prefixOf(admin): "admin", prefixOf(read): "read", prefixOf(explicit): "admin"}
	for p, r := range want {
		if roles[p] != r {
			t.Errorf("key %s listed with role %q, want %q (list: %v)", p, roles[p], r, roles)
		}
	}
	if len(roles) != len(want) {
		t.Errorf("listed %d keys, want %d", len(roles), len(want))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "keys", "create", "--account", "acme", "--role", "owner")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--role") || strings.Contains(string(out), "atst_") {
		t.Fatalf("--role owner: err %v, output %s", err, out)
	}
}

// TestAccountsLinkWallet: `attestd accounts link-wallet` links a wallet to
// an existing account and refuses a missing account or a bad address.
func TestAccountsLinkWallet(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t), "ATTESTD_LOG_LEVEL=warn"}
	runCmd(t, bin, env, "migrate")
	runCmd(t, bin, env, "keys", "create", "--account", "acme")
	const wallet = "9Z1YShWGG6hAh87VubvUojcrQsgJTZZ6FNRtt7ZvxD4a"
	if out := runCmd(t, bin, env, "accounts", "link-wallet", "--account", "acme", "--wallet", wallet); !strings.Contains(out, "acme") {
		t.Errorf("link: %s", out)
	}
	for _, args := range [][]string{
		{"--account", "nobody", "--wallet", wallet},
		{"--account", "acme", "--wallet", "not-an-address"},
		{"--account", "acme"},
	} {
		cmd := exec.Command(bin, append([]string{"accounts", "link-wallet"}, args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("%v: succeeded: %s", args, out)
		}
	}
}
