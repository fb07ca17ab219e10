package keyfile

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secret is what a mistyped path might point at: no error may quote it.
const secret = "root:x:0:0:hunter2-not-a-key:/root:/bin/bash\n"

func TestReadRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "key")
	if err := os.WriteFile(small, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat(secret, 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want string // "" : read
	}{
		{small, ""},
		{link, ""}, // a link to a regular file is that file
		{big, "larger than the 64 bytes"},
		{fifo, "not a regular file (a FIFO)"}, // would block forever if opened to read
		{"/dev/zero", "not a regular file (a character device)"},
		{dir, "not a regular file (a directory)"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		b, err := Read(c.path, 64)
		switch {
		case c.want == "" && (err != nil || string(b) != "k3y\n"):
			t.Errorf("%s: %q %v", c.path, b, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path)):
			t.Errorf("%s: %v, want an error naming the file and %q", c.path, err, c.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: the error quotes the file: %v", c.path, err)
		}
	}
}

func TestKeypair(t *testing.T) {
	key := ed25519.NewKeyFromSeed([]byte("attestd keyfile test seed 32 byt"))
	ints := make([]int, len(key))
	for i, b := range key {
		ints[i] = int(b)
	}
	good, _ := json.Marshal(ints)
	pretty, _ := json.MarshalIndent(ints, "", "    ")
	mismatched := append([]int(nil), ints...)
	mismatched[40] ^= 1
	bad, _ := json.Marshal(mismatched)
	outOfRange := append([]int(nil), ints...)
	outOfRange[3] = 256
	wide, _ := json.Marshal(outOfRange)
	short, _ := json.Marshal(ints[:32])
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		err        error
	}{
		{"good", string(good), nil},
		{"pretty", string(pretty) + "\n", nil},
		{"mismatched", string(bad), ErrMismatchedKeypair},
		{"out of range", string(wide), ErrNotKeypair},
		{"short", string(short), ErrNotKeypair},
		{"passwd", secret, ErrNotKeypair},
		{"base64", "c2VjcmV0IHNlZWQgb2YgdGhpcnR5LXR3byBieXRlcyE=", ErrNotKeypair},
		{"empty", "", ErrNotKeypair},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := Keypair(path)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
		if c.err == nil && !k.Equal(key) {
			t.Errorf("%s: read another key", c.name)
		}
		if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s: %v: want the path named and nothing of the content", c.name, err)
		}
	}
	if _, err := Keypair("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
}
