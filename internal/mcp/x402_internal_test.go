package mcp

import (
	"encoding/json"
	"testing"

	"github.com/attestd/attestd/x402"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
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

// paymentError's content[0].text is, for any PaymentRequired, one JSON
// object holding the x402/error wrapper (code 402, the message, the
// PaymentRequired as data) and the same PaymentRequired at its top level;
// never structuredContent.
func FuzzPaymentError(f *testing.F) {
	f.Add(`{"x402Version":2,"error":"Payment required","resource":{"url":"https://a.example/api/v1/premium/bulk-verify"},"accepts":[{"scheme":"exact","network":"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1","amount":"10000","asset":"4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU","payTo":"9Z1YShWGG6hAh87VubvUojcrQsgJTZZ6FNRtt7ZvxD4a","maxTimeoutSeconds":60,"extra":{"feePayer":"9Z1YShWGG6hAh87VubvUojcrQsgJTZZ6FNRtt7ZvxD4a"}}],"extensions":{"bazaar":{"info":{}}}}`)
	f.Add(`{"x402Version":2,"error":"","accepts":[]}`)
	f.Add(`{"x402Version":2,"error":"<script>\u0000\u2028 ñ 𝄞 \"x402/error\"","resource":{"url":"\u0000"}}`)
	f.Add(`{"x402Version":2,"extensions":{"x402/error":{"code":1},"a":null}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var pr x402.PaymentRequired
		if json.Unmarshal([]byte(s), &pr) != nil {
			return
		}
		for _, settle := range []*x402.SettleResponse{nil, {Success: false, ErrorReason: "settlement_failed", Network: x402.Devnet.CAIP2}} {
			res := paymentError(&pr, settle)
			if !res.IsError || res.StructuredContent != nil || len(res.Content) != 1 {
				t.Fatalf("result %+v", res)
			}
			text := res.Content[0].(*mcpsdk.TextContent).Text
			var w struct {
				E struct {
					Code    int                  `json:"code"`
					Message string               `json:"message"`
					Data    x402.PaymentRequired `json:"data"`
				} `json:"x402/error"`
			}
			var top x402.PaymentRequired
			if err := json.Unmarshal([]byte(text), &w); err != nil {
				t.Fatalf("content[0].text %q: %v", text, err)
			}
			if err := json.Unmarshal([]byte(text), &top); err != nil {
				t.Fatalf("content[0].text %q: %v", text, err)
			}
			msg := pr.Error
			if msg == "" {
				msg = "Payment required"
			}
			// Equal as they travel (an empty map and none encode alike).
			want, _ := json.Marshal(pr)
			data, _ := json.Marshal(w.E.Data)
			direct, _ := json.Marshal(top)
			if w.E.Code != ErrorCode || w.E.Message != msg || string(data) != string(want) || string(direct) != string(want) {
				t.Fatalf("content[0].text %s for %+v", text, pr)
			}
			if got, ok := res.Meta[MetaPaymentResponse]; (settle == nil) != !ok || ok && got != settle {
				t.Fatalf("_meta %v for settlement %+v", res.Meta, settle)
			}
		}
	})
}
