package mcp

import (
	"encoding/json"
	"testing"

	"github.com/attestd/attestd/x402"
)

// paymentHeader accepts only what the API would decode as a v2 payment,
// bounded, and never panics on what a caller puts in _meta.
func FuzzPaymentHeader(f *testing.F) {
	f.Add(`{"x402Version":2,"accepted":{"scheme":"exact"},"payload":{"transaction":"AAAA"}}`)
	f.Add(`"x402"`)
	f.Add(`{"x402Version":1}`)
	f.Add(`[1,2,3]`)
	f.Add(`{"x402Version":2,"payload":{"transaction":"` + string(make([]byte, 100)) + `"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		h, err := paymentHeader(v)
		if err != nil {
			return
		}
		if len(h) > x402.MaxHeaderSize {
			t.Fatalf("header of %d bytes accepted", len(h))
		}
		if _, _, err := x402.DecodePaymentV2(h); err != nil {
			t.Fatalf("accepted a payment the API cannot decode: %v", err)
		}
	})
}
