package keyring

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, spec string) *Keyring {
	t.Helper()
	k, err := Parse(spec)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return k
}

func gen(t *testing.T, id string) string {
	t.Helper()
	s, err := Generate(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpenAndRotation(t *testing.T) {
	old, new := gen(t, "k1"), gen(t, "k2")
	before := mustParse(t, old)
	secret := []byte("whsec_c2VjcmV0IHNlY3JldCBzZWNyZXQgc2VjcmV0IHNlY3I=")
	sealed, id, err := before.Seal(secret, []byte("wh_1"))
	if err != nil || id != "k1" {
		t.Fatalf("seal: %v %q", err, id)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed value contains the plaintext")
	}
	// Rotated: k2 is first and seals, k1 still opens old values.
	after := mustParse(t, new+","+old)
	if after.Primary() != "k2" || !after.NeedsReseal("k1") || after.NeedsReseal("k2") {
		t.Fatalf("primary %s", after.Primary())
	}
	got, err := after.Open(sealed, id, []byte("wh_1"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open after rotation: %v %q", err, got)
	}
	resealed, id2, err := after.Seal(got, []byte("wh_1"))
	if err != nil || id2 != "k2" {
		t.Fatalf("reseal: %v %s", err, id2)
	}
	// Once k1 is removed, only the resealed value opens.
	only := mustParse(t, new)
	if _, err := only.Open(sealed, "k1", []byte("wh_1")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old value with k1 removed: %v", err)
	}
	if got, err := only.Open(resealed, "k2", []byte("wh_1")); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("resealed: %v", err)
	}
	// Two seals of the same secret differ (random nonce).
	again, _, _ := only.Seal(secret, []byte("wh_1"))
	if bytes.Equal(again, resealed) {
		t.Fatal("two seals are equal")
	}
}

func TestOpenRefusesTamperingAndOtherRows(t *testing.T) {
	k := mustParse(t, gen(t, "a"))
	sealed, id, err := k.Seal([]byte("secret"), []byte("wh_1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open(sealed, id, []byte("wh_2")); !errors.Is(err, ErrOpen) {
		t.Fatalf("another webhook's id as aad: %v", err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x40
		if _, err := k.Open(bad, id, []byte("wh_1")); err == nil {
			t.Fatalf("byte %d flipped: opened", i)
		}
	}
	for _, short := range [][]byte{nil, {1}, sealed[:20]} {
		if _, err := k.Open(short, id, []byte("wh_1")); !errors.Is(err, ErrOpen) {
			t.Fatalf("short value %x: %v", short, err)
		}
	}
}

func TestParseErrorsNeverQuoteKeyMaterial(t *testing.T) {
	material := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 31)) // one byte short
	good := gen(t, "good")
	cases := map[string]string{
		"":                          "no keys",
		"nocolon":                   "no ':'",
		"bad id!:" + material:       "id must be",
		"k:" + material:             "want 32 bytes",
		"k:not base64 at all!!":     "want 32 bytes",
		good + "," + good:           "listed twice",
		strings.Repeat("x", 70<<10): "longer than",
	}
	for spec, want := range cases {
		_, err := Parse(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v, want error containing %q", spec, err, want)
			continue
		}
		if strings.Contains(err.Error(), material) || strings.Contains(err.Error(), strings.SplitN(good, ":", 2)[1]) {
			t.Errorf("error quotes key material: %v", err)
		}
	}
	// URL-safe alphabet and missing padding are accepted.
	raw := bytes.Repeat([]byte{0xfb}, KeySize)
	for _, enc := range []string{base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		base64.RawStdEncoding.EncodeToString(raw)} {
		if _, err := Parse(" k : " + enc + " "); err == nil {
			t.Errorf("spaces around the id are not trimmed, want an error for %q", enc)
		}
		if _, err := Parse("k:" + enc); err != nil {
			t.Errorf("Parse(k:%s): %v", enc, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	f.Add("a:b,c:d")
	f.Add(",,:")
	f.Fuzz(func(t *testing.T, spec string) {
		k, err := Parse(spec)
		if err != nil {
			if k != nil {
				t.Fatal("keyring with an error")
			}
			return
		}
		sealed, id, err := k.Seal([]byte("x"), []byte("aad"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := k.Open(sealed, id, []byte("aad")); err != nil || string(got) != "x" {
			t.Fatalf("round trip: %v", err)
		}
	})
}
