package x402

import (
	"encoding/json"
	"testing"
)

func TestPaymentIdentifier(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, ext, want string
		bad             bool
	}{
		{"absent", "", "", false},
		{"null", `null`, "", false},
		{"an id", `{"info":{"id":"pay_0123456789abcdef"}}`, "pay_0123456789abcdef", false},
		{"with a schema", `{"info":{"id":"AAAAAAAAAAAAAAAA-_"},"schema":{}}`, "AAAAAAAAAAAAAAAA-_", false},
		{"too short", `{"info":{"id":"abc"}}`, "", true},
		{"too long", `{"info":{"id":"` + string(make129()) + `"}}`, "", true},
		{"bad character", `{"info":{"id":"pay_0123456789abcde!"}}`, "", true},
		{"no info", `{"id":"pay_0123456789abcdef"}`, "", true},
		{"id not a string", `{"info":{"id":5}}`, "", true},
	}
	for _, tc := range cases {
		p := &PaymentPayload{}
		if tc.ext != "" {
			p.Extensions = map[string]json.RawMessage{ExtensionPaymentIdentifier: json.RawMessage(tc.ext)}
		}
		got, err := PaymentIdentifier(p)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
	}
}

func make129() []byte {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'a'
	}
	return b
}
