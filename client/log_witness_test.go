package client_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
)

// TestLogVerifierWitnessPolicy: a verifier with witnesses requires k of
// their cosignatures on a checkpoint: enough passes (and names them), too
// few, a forged one, or only unknown witnesses' fail with
// ErrCheckpointWitnesses; without witnesses nothing changes.
func TestLogVerifierWitnessPolicy(t *testing.T) {
	lg, err := logfixture.New("attestd.test/log")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := lg.AppendLeaf([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	signed, err := lg.Checkpoint(5)
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(signed, "\n\n")
	text += "\n"
	var keys []string
	cosign := func(name string) string {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s := logformat.NewCosignatureSigner(name, priv)
		keys = append(keys, s.String())
		b, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			t.Fatal(err)
		}
		_, line, _ := strings.Cut(string(b), "\n\n")
		return line
	}
	w1, w2, w3 := cosign("w1.test/w"), cosign("w2.test/w"), cosign("w3.test/w")
	base, err := client.NewLogVerifier(lg.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	two, err := base.WithWitnesses(2, keys[0], keys[1])
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(w2, w2[len(w2)-8:len(w2)-7], map[bool]string{true: "B", false: "A"}[w2[len(w2)-8] == 'A'], 1)
	cases := []struct {
		name string
		v    *client.LogVerifier
		note string
		want error
	}{
		{"both cosigned", two, signed + w1 + w2, nil},
		{"both and an unknown witness", two, signed + w3 + w1 + w2, nil},
		{"one of two", two, signed + w1, client.ErrCheckpointWitnesses},
		{"only an unknown witness", two, signed + w3, client.ErrCheckpointWitnesses},
		{"a forged cosignature", two, signed + w1 + forged, client.ErrCheckpointWitnesses},
		{"cosignatures, no log signature", two, text + "\n" + w1 + w2, client.ErrCheckpointSignature},
		{"no witnesses required", base, signed + w3, nil},
	}
	for _, c := range cases {
		cp, err := c.v.OpenCheckpoint([]byte(c.note))
		if !errors.Is(err, c.want) || (c.want == nil && cp == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want == nil && c.v == two && len(cp.Witnesses) != 2 {
			t.Errorf("%s: witnessed by %v", c.name, cp.Witnesses)
		}
	}
	if _, err := base.WithWitnesses(3, keys[0], keys[1]); err == nil {
		t.Error("a quorum above the keys accepted")
	}
	if _, err := base.WithWitnesses(1, lg.VerifierKey); err == nil {
		t.Error("a log key (type 0x01) accepted as a witness key")
	}
}
