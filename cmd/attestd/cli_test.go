package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook/keyring"
)

// runCLI runs the attestd binary in dir (none: a fresh temporary one)
// with only PATH and HOME and extra in its environment, and returns its
// stdout, stderr and exit status.
func runCLI(t *testing.T, bin, dir string, extra []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	// A command that should refuse but runs instead fails the test
	// rather than hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, extra...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Errorf("attestd %s still ran after 20 s (killed):\n%s", strings.Join(args, " "), errOut.String())
		code = -1
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run attestd %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// TestCommandLine holds each command-line behaviour to what a person
// needs: help per command with its flags, environment and an example;
// the version; the nearest command for a typo; a missing required flag
// named; usage mistakes exit 2.
func TestCommandLine(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   []string // each must appear on stdout
		stderr   []string // each must appear on stderr
		noStderr string   // must not appear on stderr
	}{
		{args: []string{"help", "serve"}, stdout: []string{"usage: attestd serve", "environment", "ATTESTD_HTTP_ADDR", "DATABASE_URL",
			"ATTESTD_RATE_LIMIT", "example:"}},
		{args: []string{"serve", "--help"}, stdout: []string{"usage: attestd serve", "ATTESTD_HTTP_ADDR", "example:"}},
		{args: []string{"help", "local"}, stdout: []string{"-reset", "-agents", "ATTESTD_SOLANA_RPC_URL", "make run"}},
		{args: []string{"local", "-h"}, stdout: []string{"-reset", "example:"}},
		{args: []string{"help", "index"}, stdout: []string{"ATTESTD_INDEXER_CONCURRENCY", "example:"}, noStderr: "commands:"},
		{args: []string{"help", "keys"}, stdout: []string{"keys create --account NAME", "DATABASE_URL", "example:"}},
		{args: []string{"keys", "create", "--help"}, stdout: []string{"usage: attestd keys create", "-account", "-label", "DATABASE_URL"}},
		{args: []string{"keys", "--help"}, stdout: []string{"keys list --account NAME"}},
		{args: []string{"help", "mcp"}, stdout: []string{"-http", "ATTESTD_API_URL"}},
		{args: []string{"help", "devnet"}, stdout: []string{"-rate", "example:"}},
		{args: []string{"help"}, stdout: []string{"commands:", "attestd help COMMAND"}},
		{args: []string{"--help"}, stdout: []string{"commands:"}},
		{args: []string{"--version"}, stdout: []string{buildinfo.Version}},
		{args: []string{"version"}, stdout: []string{buildinfo.Version}},
		{args: nil, code: 2, stderr: []string{"usage: attestd <command>"}},
		{args: []string{"serv"}, code: 2, stderr: []string{`unknown command "serv"`, `did you mean "serve"?`}},
		{args: []string{"migrat"}, code: 2, stderr: []string{`did you mean "migrate"?`}},
		{args: []string{"kyes", "list"}, code: 2, stderr: []string{`did you mean "keys"?`}},
		{args: []string{"help", "sevre"}, code: 2, stderr: []string{`did you mean "serve"?`}},
		{args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`}, noStderr: "did you mean"},
		{args: []string{"keys", "list"}, code: 2, stderr: []string{"keys list: --account is required", "attestd help keys"}},
		{args: []string{"keys", "create", "--label", "x"}, code: 2, stderr: []string{"keys create: --account is required"}},
		{args: []string{"accounts", "link-wallet", "--account", "demo"}, code: 2, stderr: []string{"accounts link-wallet: --wallet is required"}},
		{args: []string{"keys"}, code: 2, stderr: []string{"create, list or revoke"}},
		{args: []string{"keys", "delete"}, code: 2, stderr: []string{`unknown subcommand "delete"`}},
		{args: []string{"keys", "revoke"}, code: 2, stderr: []string{"want one key prefix"}},
		{args: []string{"payments", "list", "--status", "lost"}, code: 2, stderr: []string{"--status"}},
		{args: []string{"serve", "--bogus"}, code: 2, stderr: []string{"flag provided but not defined: -bogus", "attestd help serve"}},
		{args: []string{"seed", "--agents", "many"}, code: 2, stderr: []string{"invalid value"}},
		{args: []string{"seed", "--agents", "0"}, code: 2, stderr: []string{"seed: --agents must be >= 1"}},
		{args: []string{"stores"}, code: 2, stderr: []string{"after --"}},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, bin, "", nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if tc.noStderr != "" && strings.Contains(stderr, tc.noStderr) {
				t.Errorf("stderr should not contain %q:\n%s", tc.noStderr, stderr)
			}
		})
	}
}

// TestSuggest: typos find their command; words far from every command
// find none.
func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{
		"serv": "serve", "sever": "serve", "indx": "index", "wroker": "worker", "migrte": "migrate", "key": "keys",
		"acounts": "accounts", "healtcheck": "healthcheck", "SERVE": "serve", "loc": "local", "versoin": "version",
		"frobnicate": "", "x": "", "deploy": "",
	} {
		if got := suggest(in); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"serve", "serve", 0}, {"serv", "serve", 1}, {"sevre", "serve", 2}, {"kitten", "sitting", 3}, {"", "keys", 4},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRequired(t *testing.T) {
	if err := required("keys list", "account", "demo"); err != nil {
		t.Fatalf("present: %v", err)
	}
	err := required("accounts link-wallet", "account", "demo", "wallet", "")
	var ue usageError
	if !errors.As(err, &ue) || err.Error() != "accounts link-wallet: --wallet is required" {
		t.Fatalf("missing --wallet: %v", err)
	}
}

// TestLongRunningCommandsCheckTheSchema: serve, index and worker refuse an
// unmigrated database (naming the versions and `attestd migrate`) and one
// a newer binary migrated, instead of answering 500s.
func TestLongRunningCommandsCheckTheSchema(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	redisURL, prefix := testenv.Redis(t)
	ms, err := store.Migrations()
	testenv.Must(t, err, "migrations")
	need := versionOf(ms[len(ms)-1].Version)

	empty := testenv.Database(t)
	ahead := testenv.Database(t)
	st, err := store.Open(context.Background(), ahead, store.Options{})
	testenv.Must(t, err, "open")
	defer st.Close()
	_, err = st.Migrate(context.Background())
	testenv.Must(t, err, "migrate")
	_, err = st.Pool().Exec(context.Background(), "INSERT INTO schema_migrations (version) VALUES ('9999_newer')")
	testenv.Must(t, err, "record a newer migration")

	webhookKeys, err := keyring.Generate("k1")
	testenv.Must(t, err, "webhook key")
	for _, cmd := range []string{"serve", "index", "worker"} {
		for _, tc := range []struct {
			db   string
			want []string
		}{
			{empty, []string{"have version 0, need " + need, "run `attestd migrate`"}},
			{ahead, []string{"ahead of this binary", "9999_newer"}},
		} {
			env := []string{"DATABASE_URL=" + tc.db, "REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix,
				"ATTESTD_HTTP_ADDR=127.0.0.1:0", "ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=",
				"ATTESTD_SOLANA_RPC_URL=http://127.0.0.1:1", "ATTESTD_WEBHOOK_SECRET_KEYS=" + webhookKeys}
			_, stderr, code := runCLI(t, bin, "", env, cmd)
			if code != 1 {
				t.Errorf("%s: exit %d, want 1 (refused)\n%s", cmd, code, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, stderr)
				}
			}
			if strings.Contains(stderr, `"serving"`) || strings.Contains(stderr, "msg=serving") {
				t.Errorf("%s served on a database whose schema is not current:\n%s", cmd, stderr)
			}
		}
	}
}

// versionOf is the number of a migration version, as the schema check
// names it ("0011_x": "11").
func versionOf(v string) string {
	n := strings.TrimLeft(strings.SplitN(v, "_", 2)[0], "0")
	if n == "" {
		return "0"
	}
	return n
}
