package settings

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// bad is one bad value for a variable of each package a role reads.
var bad = map[Role]map[string]string{
	Serve: {
		"ATTESTD_DB_MAX_CONNS":            "many",        // internal/config
		"ATTESTD_HTTP_MAX_AGE":            "soon",        // internal/httpcache
		"ATTESTD_RATE_LIMIT":              "-1",          // ratelimit
		"ATTESTD_REPLICA_MAX_LAG":         "a while",     // store (replicas)
		"ATTESTD_SOLANA_RPC_URL":          "::not a url", // the chain's RPC, for /health
		"ATTESTD_KEY_CACHE_TTL":           "forever",     // apikey
		"ATTESTD_WEB_SESSION_TTL":         "a day",       // web
		"ATTESTD_REPORT_BURST_PER_MINUTE": "lots",        // premium
		"ATTESTD_STREAM_MAX_PER_IP":       "0.5",         // stream
		"ATTESTD_X402_PAY_TO":             "not-a-key",   // x402/verifier
		"ATTESTD_LOG_BATCH":               "big",         // translog
		"ATTESTD_WEBHOOK_TIMEOUT":         "never",       // webhook
	},
	Index: {
		"ATTESTD_SHUTDOWN_TIMEOUT":        "later", // internal/config
		"ATTESTD_INDEXER_CONCURRENCY":     "0",     // indexer
		"ATTESTD_X402_RECONCILE_INTERVAL": "often", // the payments reconciler
		"ATTESTD_PURGE_TIMEOUT":           "soon",  // internal/purge
		"ATTESTD_LOG_CHECKPOINT_INTERVAL": "x",     // translog
	},
	Worker: {
		"ATTESTD_DB_MAX_CONNS":            "many",
		"ATTESTD_WEBHOOK_MAX_PER_ACCOUNT": "all",
	},
	MCP: {
		"ATTESTD_SHUTDOWN_TIMEOUT": "later",
		"ATTESTD_API_TIMEOUT":      "whenever", // mcp
	},
}

// TestLoadNamesEveryBadVariableAtOnce: with one bad value in each package a
// role reads, Load names every one of them in one error, and dials none of
// the stores, chain or facilitator the settings point at.
func TestLoadNamesEveryBadVariableAtOnce(t *testing.T) {
	addr, dialled := testenv.ConnCounter(t)
	local := map[string]string{}
	for _, role := range []Role{Serve, Index, Worker} {
		for k, v := range bad[role] {
			local[k] = v
		}
	}
	cases := map[Role]map[string]string{Serve: bad[Serve], Index: bad[Index], Worker: bad[Worker], MCP: bad[MCP], Local: local}
	for role, vars := range cases {
		t.Run(string(role), func(t *testing.T) {
			env := map[string]string{
				"DATABASE_URL": "postgres://" + addr + "/db", "REDIS_URL": "redis://" + addr,
				"ATTESTD_X402_FACILITATOR_URL": "http://" + addr + "/facilitator", "ATTESTD_API_URL": "http://" + addr,
			}
			for k, v := range vars {
				env[k] = v
			}
			_, err := Load(role, func(k string) string { return env[k] })
			if err == nil {
				t.Fatalf("%d bad values, no error", len(vars))
			}
			for k := range vars {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("the error does not name %s:\n%v", k, err)
				}
			}
		})
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("reading settings made %d connections", n)
	}
}

// TestLoadReadsOnlyWhatTheRoleUses: an API node does not stop on a bad
// indexer, reconciler or purge setting (the indexer's), and a worker not on
// the API's.
func TestLoadReadsOnlyWhatTheRoleUses(t *testing.T) {
	for _, c := range []struct {
		role Role
		env  map[string]string
	}{
		{Serve, bad[Index]},
		// The indexer does not stop on the API's pay-per-request, stream or
		// key settings (nor read the fee payer's key file).
		{Index, map[string]string{"ATTESTD_X402_PAY_TO": "not-a-key", "ATTESTD_X402_FEE_PAYER_KEYPAIR": "/nonexistent/key.json",
			"ATTESTD_STREAM_MAX_PER_IP": "0.5", "ATTESTD_KEY_CACHE_TTL": "forever"}},
		{Worker, bad[Serve]},
		{MCP, bad[Serve]},
	} {
		env := map[string]string{}
		for k, v := range c.env {
			if k != "ATTESTD_SHUTDOWN_TIMEOUT" && k != "ATTESTD_DB_MAX_CONNS" && (c.role != Worker || !strings.HasPrefix(k, "ATTESTD_WEBHOOK_")) &&
				(c.role != Serve || k != "ATTESTD_LOG_CHECKPOINT_INTERVAL") {
				env[k] = v
			}
		}
		if _, err := Load(c.role, func(k string) string { return env[k] }); err != nil {
			t.Errorf("%s stopped on another role's settings: %v", c.role, err)
		}
	}
}

func TestLoadGood(t *testing.T) {
	env := map[string]string{"ATTESTD_SOLANA_RPC_URL": "http://127.0.0.1:18899", "ATTESTD_X402_RPC_URL": ""}
	s, err := Load(Local, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.ChainRPC != "http://127.0.0.1:18899" || s.Indexer.RPCURL != s.ChainRPC || s.PaymentsRPC != s.ChainRPC {
		t.Fatalf("chain %q, indexer %q, payments %q", s.ChainRPC, s.Indexer.RPCURL, s.PaymentsRPC)
	}
	if _, err := Load("gateway", nil); err == nil {
		t.Fatal("an unknown role loaded")
	}
}

func TestOverlay(t *testing.T) {
	base := map[string]string{"A": "base", "B": "base"}
	o := NewOverlay(func(k string) string { return base[k] })
	o.Set("B", "over")
	o.Set("C", "")
	if o.Getenv("A") != "base" || o.Getenv("B") != "over" || o.Getenv("C") != "" || o.Getenv("D") != "" {
		t.Fatalf("A %q B %q C %q", o.Getenv("A"), o.Getenv("B"), o.Getenv("C"))
	}
}

// TestKeyFilesAreReadSafely: every setting that names a file refuses,
// without blocking and without reading without end, a device, a FIFO and
// a directory, and never quotes what a wrong file holds.
func TestKeyFilesAreReadSafely(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	testenv.Must(t, syscall.Mkfifo(fifo, 0o600), "fifo")
	passwd := filepath.Join(dir, "passwd")
	testenv.Must(t, os.WriteFile(passwd, []byte("root:x:0:0:hunter2:/root:/bin/bash\n"), 0o600), "passwd")
	payTo := "9Z1YShWGG6hAh87VubvUojcrQsgJTZZ6FNRtt7ZvxD4a"
	files := []struct {
		role Role
		name string
		with map[string]string
	}{
		{Serve, "ATTESTD_LOG_KEY_FILE", nil},
		{Index, "ATTESTD_LOG_KEY_FILE", nil},
		{Serve, "ATTESTD_X402_RECEIPT_KEY_FILE", map[string]string{"ATTESTD_X402_PAY_TO": payTo, "ATTESTD_X402_FACILITATOR_URL": "https://facilitator.example"}},
		{Serve, "ATTESTD_X402_FEE_PAYER_KEYPAIR", map[string]string{"ATTESTD_X402_PAY_TO": payTo, "ATTESTD_X402_RPC_URL": "http://127.0.0.1:1"}},
		{MCP, "ATTESTD_MCP_PAYER_KEYPAIR", nil},
	}
	for _, f := range files {
		for _, path := range []string{"/dev/zero", fifo, dir, passwd} {
			t.Run(string(f.role)+" "+f.name+" "+filepath.Base(path), func(t *testing.T) {
				env := map[string]string{f.name: path}
				for k, v := range f.with {
					env[k] = v
				}
				_, err := Load(f.role, func(k string) string { return env[k] })
				if err == nil || !strings.Contains(err.Error(), f.name) || !strings.Contains(err.Error(), path) {
					t.Fatalf("%s=%s: %v; want an error naming both", f.name, path, err)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "root:") {
					t.Fatalf("the error quotes the file: %v", err)
				}
			})
		}
	}
}

// TestLoadChecksTracing: the OpenTelemetry variables of a process that
// traces are checked with the rest, and named with them.
func TestLoadChecksTracing(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "bogus",
		"OTEL_TRACES_SAMPLER_ARG": "7", "ATTESTD_RATE_LIMIT": "-1"}
	for _, role := range []Role{Serve, Index, Worker, Local} {
		_, err := Load(role, func(k string) string { return env[k] })
		for _, name := range []string{"OTEL_TRACES_SAMPLER:", "OTEL_TRACES_SAMPLER_ARG"} {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %v does not name %s", role, err, name)
			}
		}
	}
}
