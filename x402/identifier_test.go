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
		{"declaration echoed, no id", string(PaymentIdentifierDeclaration), "", false},
		{"declaration echoed with an id", `{"info":{"required":false,"id":"pay_7d5d747be160e280504c099d984bcfe0"},"schema":{}}`, "pay_7d5d747be160e280504c099d984bcfe0", false},
		{"id null", `{"info":{"required":false,"id":null}}`, "", false},
		{"info not an object", `{"info":"pay_0123456789abcdef"}`, "", true},
		{"info null", `{"info":null}`, "", true},
		{"not an object", `"pay_0123456789abcdef"`, "", true},
		{"id with a NUL", `{"info":{"id":"pay_0123456789abcd\u0000"}}`, "", true},
		{"id with unicode", `{"info":{"id":"pay_0123456789abcdé"}}`, "", true},
		{"id an array", `{"info":{"id":["pay_0123456789abcdef"]}}`, "", true},
		{"id exactly 16", `{"info":{"id":"aaaaaaaaaaaaaaaa"}}`, "aaaaaaaaaaaaaaaa", false},
		{"id exactly 128", `{"info":{"id":"` + string(make129()[:128]) + `"}}`, string(make129()[:128]), false},
		{"id 15", `{"info":{"id":"aaaaaaaaaaaaaaa"}}`, "", true},
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

// The declaration every 402 carries is what the official client checks
// before adding an id: info.required a boolean, and a schema.
func TestPaymentIdentifierDeclaration(t *testing.T) {
	t.Parallel()
	var d struct {
		Info   map[string]any `json:"info"`
		Schema map[string]any `json:"schema"`
	}
	if err := json.Unmarshal(PaymentIdentifierDeclaration, &d); err != nil {
		t.Fatal(err)
	}
	if req, ok := d.Info["required"].(bool); !ok || req || len(d.Info) != 1 || d.Schema["$schema"] == nil {
		t.Fatalf("declaration %s", PaymentIdentifierDeclaration)
	}
}

func make129() []byte {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

// FuzzPaymentIdentifier: any extension value yields an id that meets the
// extension's rules, "" or a typed invalid_payload error; never a panic.
func FuzzPaymentIdentifier(f *testing.F) {
	for _, s := range []string{`null`, string(PaymentIdentifierDeclaration), `{"info":{"id":"pay_0123456789abcdef"}}`,
		`{"info":{"id":null}}`, `{"info":{"id":5}}`, `{"info":"x"}`, `[]`, `{"info":{"id":"pay_0123456789abcd\u0000"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ext string) {
		p := &PaymentPayload{Extensions: map[string]json.RawMessage{ExtensionPaymentIdentifier: json.RawMessage(ext)}}
		id, err := PaymentIdentifier(p)
		if err != nil {
			if e, ok := AsError(err); !ok || e.Reason != ReasonInvalidPayload || id != "" {
				t.Fatalf("%q: %q %v", ext, id, err)
			}
			return
		}
		if id != "" && (len(id) < PaymentIDMinLength || len(id) > PaymentIDMaxLength || !idChars(id)) {
			t.Fatalf("%q: accepted id %q", ext, id)
		}
	})
}
