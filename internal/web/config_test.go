package web_test

import (
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/x402"
)

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := web.ConfigFromEnv(env(nil))
	if err != nil || c.NewAccountsPerHour != web.DefaultNewAccountsPerHour || !c.Origin.IsZero() {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if c, err := web.ConfigFromEnv(env(map[string]string{"ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR": "0"})); err != nil || c.NewAccountsPerHour != 0 {
		t.Fatalf("no limit: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"ATTESTD_WEB_DOMAIN": "console.example"},
		{"ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR": "-1"},
		{"ATTESTD_WEB_NEW_ACCOUNTS_PER_HOUR": "many"},
	} {
		_, err := web.ConfigFromEnv(env(bad))
		if err == nil {
			t.Errorf("%v: want an error", bad)
		}
		if _, ok := bad["ATTESTD_WEB_DOMAIN"]; ok && (err == nil || !strings.Contains(err.Error(), "ATTESTD_PUBLIC_URL")) {
			t.Errorf("ATTESTD_WEB_DOMAIN set: %v, want an error pointing at ATTESTD_PUBLIC_URL", err)
		}
	}
	if web.ChainFor(x402.Devnet) != "devnet" || web.ChainFor(x402.Mainnet) != "mainnet" {
		t.Error("ChainFor")
	}
}
