package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
)

func TestConfigFromEnv(t *testing.T) {
	key := solana.NewWallet().PrivateKey
	file := filepath.Join(t.TempDir(), "fee.json")
	var sb strings.Builder
	sb.WriteString("[")
	for i, c := range key {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(itoa(int(c)))
	}
	sb.WriteString("]")
	if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	payTo := solana.NewWallet().PublicKey().String()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	// Off.
	if c, err := ConfigFromEnv(env()); err != nil || c.Enabled() {
		t.Fatalf("empty: %+v %v", c, err)
	}
	// Self-settling on devnet with the defaults.
	c, err := ConfigFromEnv(env("ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_NETWORK", "solana-devnet", "ATTESTD_X402_FEE_PAYER_KEYPAIR", file))
	if err != nil || !c.Enabled() || !c.SelfSettling() || c.FeePayer.PublicKey() != key.PublicKey() || c.Asset.String() != "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" ||
		c.Prices["/premium/full-history/:agentId"] != 10000 || c.Prices["/premium/forensic-report/:agentId"] != 50000 ||
		c.Prices["/premium/bulk-verify"] != 20000 || c.RPCURL != "http://127.0.0.1:8899" {
		t.Fatalf("self: %+v %v", c, err)
	}
	for name, tc := range map[string]struct {
		env  []string
		want string
	}{
		"no settler":          {[]string{"ATTESTD_X402_PAY_TO", payTo}, "ATTESTD_X402_FACILITATOR_URL"},
		"both settlers":       {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_FEE_PAYER_KEYPAIR", file, "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "not both"},
		"settler without pay": {[]string{"ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "ATTESTD_X402_PAY_TO is not set"},
		"bad pay to":          {[]string{"ATTESTD_X402_PAY_TO", "nope", "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "ATTESTD_X402_PAY_TO"},
		"bad network":         {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_NETWORK", "eth", "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "ATTESTD_X402_NETWORK"},
		"usdc of other net":   {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_ASSET", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "another network"},
		"custom asset":        {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_ASSET", payTo, "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "ATTESTD_X402_ASSET_DECIMALS"},
		"bad price":           {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_PRICE_BULK_VERIFY", "0.0000001", "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "ATTESTD_X402_PRICE_BULK_VERIFY"},
		"atomic price":        {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_PRICE_BULK_VERIFY", "20000", "ATTESTD_X402_FACILITATOR_URL", "https://f.example"}, "atomic units"},
		"missing keypair":     {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_FEE_PAYER_KEYPAIR", "/nonexistent.json"}, "ATTESTD_X402_FEE_PAYER_KEYPAIR"},
		"bad facilitator":     {[]string{"ATTESTD_X402_PAY_TO", payTo, "ATTESTD_X402_FACILITATOR_URL", "ftp://x"}, "ATTESTD_X402_FACILITATOR_URL"},
	} {
		if _, err := ConfigFromEnv(env(tc.env...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want it to name %s)", name, err, tc.want)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}
