package indexer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/devnet"
)

func TestDefaultWSURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:8899", "ws://127.0.0.1:8900"},
		{"https://rpc.example.com:443/x?k=1", "wss://rpc.example.com:444/x?k=1"},
		{"https://api.devnet.solana.com", "wss://api.devnet.solana.com"},
		{"http://[::1]:8899", "ws://[::1]:8900"},
	}
	for _, c := range cases {
		got, err := DefaultWSURL(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8899", "ftp://x:1"} {
		if _, err := DefaultWSURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.RPCURL != "http://127.0.0.1:8899" || c.WSURL != "ws://127.0.0.1:8900" ||
		c.ProgramID.String() != attestation.DefaultProgramID || c.Concurrency != 8 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_SOLANA_RPC_URL": "http://h:1", "ATTESTD_INDEXER_CONCURRENCY": "3",
		"ATTESTD_INDEXER_POLL_INTERVAL": "250ms"}))
	if err != nil || c.WSURL != "ws://h:2" || c.Concurrency != 3 || c.PollInterval != 250*time.Millisecond {
		t.Fatalf("set: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(nil))
	if err != nil || c.PendingTimeout != 10*time.Minute || c.ReconcileInterval != 5*time.Minute || c.ReconcileWindow != 9000 ||
		c.PendingRetry != time.Second || c.PendingMaxBackoff != time.Minute {
		t.Fatalf("pending and reconciliation defaults: %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_INDEXER_PENDING_TIMEOUT": "3m", "ATTESTD_INDEXER_RECONCILE_INTERVAL": "30s",
		"ATTESTD_INDEXER_RECONCILE_WINDOW": "100"}))
	if err != nil || c.PendingTimeout != 3*time.Minute || c.ReconcileInterval != 30*time.Second || c.ReconcileWindow != 100 {
		t.Fatalf("pending and reconciliation set: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"ATTESTD_PROGRAM_ID": "nope"}, {"ATTESTD_INDEXER_CONCURRENCY": "0"}, {"ATTESTD_INDEXER_POLL_INTERVAL": "soon"},
		{"ATTESTD_SOLANA_RPC_URL": "nope"}, {"ATTESTD_INDEXER_PENDING_TIMEOUT": "10ms"},
		{"ATTESTD_INDEXER_RECONCILE_WINDOW": "0"}, {"ATTESTD_INDEXER_RECONCILE_INTERVAL": "forever"},
	} {
		if _, err := ConfigFromEnv(env(bad)); err == nil || !strings.Contains(err.Error(), "") {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestChainProbe(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@mainnet.helius-rpc.com/?api-key=secret": "https://mainnet.helius-rpc.com",
		"http://127.0.0.1:8899":                                  "http://127.0.0.1:8899",
		"not a url":                                              "",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redact %q = %q, want %q", in, got, want)
		}
	}
	c := startChain(t, devnet.Config{})
	p := NewChainProbe(c.RPCURL())
	if !p.Reachable(context.Background()) {
		t.Fatal("devnet not reachable")
	}
	down := NewChainProbe("http://127.0.0.1:1")
	if down.Reachable(context.Background()) {
		t.Fatal("closed port reachable")
	}
}
