package x402fiber

import (
	"encoding/json"
	"testing"

	"github.com/attestd/attestd/x402"
)

// The bazaar extension and the payment-identifier declaration are spliced
// into the encoded header; with other extensions present the header still
// holds one extensions member with all of them (never two members, which
// decoders read differently).
func TestEncodeRequiredExtensions(t *testing.T) {
	bz := json.RawMessage(`{"info":{"input":{"type":"http","method":"GET"}}}`)
	base := x402.PaymentRequired{X402Version: 2, Resource: x402.ResourceInfo{URL: "https://attestd.example.com/x"},
		Accepts: []x402.Requirements{{Scheme: x402.SchemeExact, Network: "solana:x", Amount: "1"}}}
	other := base
	other.Extensions = map[string]json.RawMessage{"offer-receipt": json.RawMessage(`{"info":{}}`)}
	for name, tc := range map[string]struct {
		pr   x402.PaymentRequired
		want []string
	}{
		"bazaar alone": {base, []string{x402.ExtensionBazaar, x402.ExtensionPaymentIdentifier}},
		"with another": {other, []string{x402.ExtensionBazaar, x402.ExtensionPaymentIdentifier, "offer-receipt"}},
	} {
		h, err := encodeRequired(tc.pr, bz)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pr, err := x402.DecodePaymentRequired(h)
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if len(pr.Extensions) != len(tc.want) {
			t.Fatalf("%s: extensions %v, want %v", name, pr.Extensions, tc.want)
		}
		for _, k := range tc.want {
			if pr.Extensions[k] == nil {
				t.Errorf("%s: extension %s missing", name, k)
			}
		}
		raw, _ := json.Marshal(pr.Extensions[x402.ExtensionBazaar])
		if string(raw) != string(bz) {
			t.Errorf("%s: bazaar %s, want %s", name, raw, bz)
		}
		if raw, _ := json.Marshal(pr.Extensions[x402.ExtensionPaymentIdentifier]); string(raw) != string(x402.PaymentIdentifierDeclaration) {
			t.Errorf("%s: payment-identifier %s", name, raw)
		}
	}
	if len(other.Extensions) != 1 {
		t.Error("encodeRequired changed its caller's extensions")
	}
}
