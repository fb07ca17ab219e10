package signature

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSignerWithOverlapAndV1a: during the overlap both secrets verify and
// x-service-signature uses the previous one; after it only the new one;
// v1a entries verify with the published key and not after tampering.
func TestSignerWithOverlapAndV1a(t *testing.T) {
	oldS, _ := NewSecret()
	newS, _ := NewSecret()
	priv, pub, err := NewEd25519()
	if err != nil {
		t.Fatal(err)
	}
	if PublicKeyOf(priv) != pub {
		t.Fatal("PublicKeyOf")
	}
	now := time.Unix(1_800_000_000, 0)
	s, err := NewSignerWith(Keys{V1: true, Secret: newS, Previous: oldS, PreviousUntil: now.Add(time.Hour), Ed25519: priv})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_1"}`)
	h := http.Header{}
	s.Set(h, "msg_1", now, body)
	if n := len(strings.Fields(h.Get(HeaderSignature))); n != 3 {
		t.Fatalf("overlap with v1a: %d entries", n)
	}
	for _, sec := range []string{oldS, newS} {
		if err := Verify(sec, h, body, now, 0); err != nil {
			t.Errorf("overlap: %v", err)
		}
	}
	if VerifyService(oldS, h.Get(HeaderService), body) != nil || VerifyService(newS, h.Get(HeaderService), body) == nil {
		t.Error("x-service-signature during the overlap is not the old secret's")
	}
	if err := VerifyV1a(pub, h, body, now, 0); err != nil {
		t.Errorf("v1a: %v", err)
	}
	if VerifyV1a(pub, h, append(body, ' '), now, 0) == nil {
		t.Error("v1a verified a tampered body")
	}
	later := now.Add(time.Hour)
	h = http.Header{}
	s.Set(h, "msg_1", later, body)
	if Verify(oldS, h, body, later, 0) == nil || Verify(newS, h, body, later, 0) != nil || VerifyService(newS, h.Get(HeaderService), body) != nil {
		t.Error("after the overlap only the new secret must sign")
	}
	only, err := NewSignerWith(Keys{Ed25519: priv})
	if err != nil {
		t.Fatal(err)
	}
	h = http.Header{}
	only.Set(h, "msg_2", now, body)
	if h.Get(HeaderService) != "" || strings.Contains(h.Get(HeaderSignature), "v1,") || VerifyV1a(pub, h, body, now, 0) != nil {
		t.Errorf("v1a only: %v", h)
	}
	if _, err := NewSignerWith(Keys{}); err == nil {
		t.Error("a signer without keys")
	}
	for _, bad := range []string{"", "whpk_", "whpk_AAAA", "x" + pub, pub + "=="} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
}
