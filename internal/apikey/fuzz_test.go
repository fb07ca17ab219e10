package apikey

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/mr-tron/base58"
)

// FuzzParse: any presented key text is answered without a panic, and an
// accepted key is exactly "atst_" + the canonical base58 of 32 bytes, named
// by its first 8 characters and hashed whole.
func FuzzParse(f *testing.F) {
	// Keys of fixed secrets (the seed corpus stays the same from run to
	// run): the smallest, the largest and a middling 32-byte value.
	for _, b := range [][]byte{make([]byte, 32), bytes.Repeat([]byte{0xff}, 32), bytes.Repeat([]byte{0x5a, 0x01}, 16)} {
		k := KeyPrefix + base58.Encode(b)
		f.Add(k)
		f.Add(k + "xx")
		f.Add(k[:len(k)-1])
	}
	f.Add("atst_" + strings.Repeat("1", 32))
	f.Add("atst_" + strings.Repeat("z", 44))
	f.Add("atst_0OIl" + strings.Repeat("2", 36))
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		prefix, hash, ok := Parse(key)
		if !ok {
			if prefix != "" || hash != [32]byte{} {
				t.Fatalf("refused %q but returned %q %x", key, prefix, hash)
			}
			return
		}
		body, found := strings.CutPrefix(key, KeyPrefix)
		if !found {
			t.Fatalf("accepted %q without the %s prefix", key, KeyPrefix)
		}
		raw, err := base58.Decode(body)
		if err != nil || len(raw) != SecretSize || base58.Encode(raw) != body {
			t.Fatalf("accepted %q: decodes to %d bytes (%v), canonical %v", key, len(raw), err, base58.Encode(raw) == body)
		}
		if prefix != body[:PrefixLen] || !ValidPrefix(prefix) || hash != Hash(key) {
			t.Fatalf("accepted %q with prefix %q hash %x", key, prefix, hash)
		}
	})
}

// FuzzCreateBody: any POST /keys body is a label and a role, or a 4xx API
// error.
func FuzzCreateBody(f *testing.F) {
	for _, s := range []string{"", `{"label":"ci"}`, `{"label":5}`, `{"label":"a\u0007"}`, `["x"]`, `null`,
		`{"label":"ci","label":"cd"}`, `{"label":"\ud800"}`, `{"role":"admin"}`, `{"label":"x","role":"read"}`,
		`{"role":"root"}`, `{"role":null}`, `{"role":1}`} {
		f.Add("application/json", []byte(s))
	}
	f.Add("text/plain", []byte(`{"label":"ci"}`))
	f.Add("application/json; charset=\"", []byte(`{}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req, err := parseCreateBody(contentType, body)
		if err != nil {
			e, ok := apierror.As(err)
			if !ok || e.Status < 400 || e.Status > 499 || e.Message == "" {
				t.Fatalf("body %q (%q): error %v is not a 4xx API error", body, contentType, err)
			}
			return
		}
		if verr := ValidateLabel(req.label); verr != nil {
			t.Fatalf("accepted label %q that ValidateLabel refuses: %v", req.label, verr)
		}
		if !req.role.Valid() {
			t.Fatalf("accepted role %q", req.role)
		}
	})
}
