package logformat

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is the body of a C2SP tlog-checkpoint: the origin, the tree
// size and the root hash.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text is the checkpoint's note text: the origin, the size in decimal and
// the root hash in standard base64, each on its own line.
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatInt(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Root[:]) + "\n"
}

// Sign signs the checkpoint as a note with each signer (during a key
// rotation, the new and the old key: one signature line each); none, or
// a nil one, is an error.
func (c Checkpoint) Sign(signers ...note.Signer) (string, error) {
	if len(signers) == 0 || slices.Contains(signers, nil) {
		return "", errors.New("sign checkpoint: no private key (the log key is a verifier key only)")
	}
	b, err := note.Sign(&note.Note{Text: c.Text()}, signers...)
	if err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	return string(b), nil
}

// OpenCheckpoint verifies a signed checkpoint with v and parses its body.
// Extension lines after the root are allowed and ignored.
func OpenCheckpoint(signed []byte, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	return ParseCheckpoint(n.Text)
}

// ParseCheckpoint parses a checkpoint's note text (not its signatures).
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return Checkpoint{}, errors.New("checkpoint: want origin, size and root hash lines")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, errors.New("checkpoint: size is not a decimal number")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize || !bytes.Equal([]byte(base64.StdEncoding.EncodeToString(root)), []byte(lines[2])) {
		return Checkpoint{}, errors.New("checkpoint: root hash is not 32 bytes in base64")
	}
	return Checkpoint{Origin: lines[0], Size: size, Root: tlog.Hash(root)}, nil
}
