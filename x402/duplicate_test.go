package x402

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestPaymentHeaderWithAKeyTwiceIsRefused: a PAYMENT-SIGNATURE whose JSON
// held a member twice was read with the last one (a facilitator or a log
// may read the first). It is refused, naming the member.
func TestPaymentHeaderWithAKeyTwiceIsRefused(t *testing.T) {
	wire, terms := payment(t)
	q := Requirements{Scheme: SchemeExact, Network: Devnet.CAIP2, Amount: "10000", Asset: Devnet.USDC.String(), PayTo: terms.PayTo.String(),
		MaxTimeoutSeconds: 60, Extra: &Extra{FeePayer: terms.FeePayer.String()}}
	h, err := EncodeHeader(NewPaymentPayload(ResourceInfo{URL: "http://127.0.0.1/x"}, q, wire))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := DecodePaymentV2(h); err != nil {
		t.Fatalf("the plain header: %v", err)
	}
	raw, _ := base64.StdEncoding.DecodeString(h)
	for name, doubled := range map[string]string{
		"top level": `{"x402Version":2,` + string(raw[1:]),
		"nested":    strings.Replace(string(raw), `"payload":{`, `"payload":{"transaction":"AAAA",`, 1),
	} {
		_, _, err := DecodePaymentV2(base64.StdEncoding.EncodeToString([]byte(doubled)))
		if err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
