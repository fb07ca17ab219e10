package logformat

import (
	"crypto/rand"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestCheckpointRoundTrip(t *testing.T) {
	skey, vkey, _ := note.GenerateKey(rand.Reader, "example.com/log")
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: signer.Name(), Size: 12345}
	c.Root[3] = 7
	signed, err := c.Sign(signer)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := note.NewVerifier(vkey)
	got, err := OpenCheckpoint([]byte(signed), v)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if !strings.HasPrefix(signed, "example.com/log\n12345\nAAAABwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— example.com/log ") {
		t.Fatalf("not a C2SP checkpoint: %q", signed)
	}
	for _, bad := range []string{"", "o\n", "o\n1\n", "o\n01\nAAAHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "o\n-1\nAAAHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		"o\n1\nAAAH\n", "\n1\nAAAHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "o\n1\nAAAHAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n"} {
		if _, err := ParseCheckpoint(bad); err == nil {
			t.Errorf("ParseCheckpoint(%q) accepted", bad)
		}
	}
	if _, err := c.Sign(nil); err == nil {
		t.Error("a verifier key signed")
	}
}
