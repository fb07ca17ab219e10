package logformat

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
)

// TestCosignaturesAgreeWithTorchwood: torchwood's cosignature signer (what
// litewitness signs with) and ours make keys and signatures each verifies
// with the other's code; tampered text, keys and signatures fail.
func TestCosignaturesAgreeWithTorchwood(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	tw, err := torchwood.NewCosignatureSigner("witness.test/w1", priv)
	if err != nil {
		t.Fatal(err)
	}
	ours := NewCosignatureSigner("witness.test/w1", priv)
	if tw.Verifier().String() != ours.String() {
		t.Fatalf("verifier keys differ: torchwood %s, ours %s", tw.Verifier().String(), ours.String())
	}
	v, err := ParseCosignatureKey(tw.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	text := "example.com/log\n42\nAAAABwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	for name, signer := range map[string]note.Signer{"torchwood": tw, "ours": ours} {
		signed, err := note.Sign(&note.Note{Text: text}, signer)
		if err != nil {
			t.Fatal(err)
		}
		for vname, verifier := range map[string]note.Verifier{"torchwood": tw.Verifier(), "ours": v} {
			if _, err := note.Open(signed, note.VerifierList(verifier)); err != nil {
				t.Errorf("%s's cosignature with %s's verifier: %v", name, vname, err)
			}
		}
		tampered := strings.Replace(string(signed), "\n42\n", "\n43\n", 1)
		if _, err := note.Open([]byte(tampered), note.VerifierList(v)); err == nil {
			t.Errorf("%s's cosignature verifies over another size", name)
		}
	}
	// Hostile keys.
	good := ours.String()
	for _, k := range []string{"", "a+b", good[:len(good)-4], strings.Replace(good, "witness.test", "witness.tesu", 1),
		strings.Replace(good, "+", " +", 1), "x+00000000+" + strings.Repeat("A", 44), good + "AAAA", "n\x00+00000000+AAAA",
		func() string { k, _, _ := note.GenerateKey(rand.Reader, "witness.test/w1"); return k }()} {
		if _, err := ParseCosignatureKey(k); err == nil {
			t.Errorf("ParseCosignatureKey(%q) accepted", k)
		}
	}
	// An Ed25519 note key (type 0x01) is not a cosignature key, and a
	// signature of the wrong length or a zero timestamp is refused.
	if v.Verify([]byte(text), make([]byte, 71)) || v.Verify([]byte(text), make([]byte, 72)) {
		t.Error("a malformed cosignature verified")
	}
}
