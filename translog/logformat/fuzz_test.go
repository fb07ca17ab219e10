package logformat

import (
	"bytes"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// FuzzParseEntryBundle: the parser never panics, and what it accepts
// encodes back to the same bytes.
func FuzzParseEntryBundle(f *testing.F) {
	b, _ := EntryBundle([][]byte{[]byte(`{"pda":"x"}`), nil, []byte("y")})
	for _, s := range [][]byte{b, {0}, {0, 5, 'a'}, {0, 0}, {}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		leaves, err := ParseEntryBundle(b)
		if err != nil {
			return
		}
		again, err := EntryBundle(leaves)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%x parses to %d leaves that encode to %x (%v)", b, len(leaves), again, err)
		}
	})
}

// FuzzParseCheckpoint: the parser never panics, and what it accepts has
// one spelling: its Text is the input's first three lines.
func FuzzParseCheckpoint(f *testing.F) {
	for _, s := range []string{"example.com/log\n12345\nAAAABwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		"o\n0\nAAAABwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\next\n", "o\n-1\n\n", "o\n01\nAAAA\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCheckpoint(s)
		if err != nil {
			return
		}
		if c.Size < 0 || c.Origin == "" {
			t.Fatalf("%q parses to %+v", s, c)
		}
		if text := c.Text(); len(s) < len(text) || s[:len(text)] != text {
			t.Fatalf("%q parses to %+v whose text is %q", s, c, text)
		}
	})
}

// FuzzParseProof: the tlog-proof parser never panics, and what it accepts
// has one spelling: it marshals back to the same bytes.
func FuzzParseProof(f *testing.F) {
	var h [32]byte
	h[1] = 9
	p := Proof{Extra: []byte(`{"pda":"x"}`), Index: 7, Hashes: []tlog.Hash{h, h}, Checkpoint: "o\n8\nAAAA\n\n— o abc\n"}
	for _, s := range [][]byte{p.Marshal(), Proof{Index: 0, Checkpoint: "x"}.Marshal(), []byte("c2sp.org/tlog-proof@v1\nindex 01\n\n"),
		[]byte("c2sp.org/tlog-proof@v1\nextra \nindex 0\n\n"), {}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProof(b)
		if err != nil {
			return
		}
		if again := p.Marshal(); !bytes.Equal(again, b) {
			t.Fatalf("%q parses to %+v, which marshals to %q", b, p, again)
		}
	})
}
