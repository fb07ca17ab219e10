package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// KeypairMax is the largest Solana CLI keypair file Keypair reads: 64
// numbers, however they are spaced, fit with room to spare.
const KeypairMax = 4 << 10

// Read reads the file at path, which must be a regular file of at most max
// bytes. It opens the file without blocking (a FIFO with no writer would
// otherwise hold the start forever) and refuses devices, FIFOs, sockets
// and directories before reading a byte.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err // *fs.PathError: "open <path>: <reason>"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, larger than the %d bytes a key file may be", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max { // grew since Stat
		return nil, fmt.Errorf("%s is larger than the %d bytes a key file may be", path, max)
	}
	return b, nil
}

// kind names a file mode that is not a regular file's.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.Type().String()
}

// ErrNotKeypair is what ParseKeypair says of text that is not a Solana
// CLI keypair; it says nothing of the text.
var ErrNotKeypair = errors.New("not a Solana CLI keypair: want a JSON array of 64 numbers from 0 to 255")

// ErrMismatchedKeypair is a 64-byte keypair whose public half is not the
// public key of its secret half.
var ErrMismatchedKeypair = errors.New("the keypair's public half is not the public key of its secret half")

// ParseKeypair reads a Solana CLI keypair (a JSON array of the 64 bytes of
// an Ed25519 private key: seed, then public key) and checks that its
// halves belong together.
func ParseKeypair(text []byte) (ed25519.PrivateKey, error) {
	var ints []int
	if err := json.Unmarshal(bytes.TrimSpace(text), &ints); err != nil || len(ints) != ed25519.PrivateKeySize {
		return nil, ErrNotKeypair
	}
	b := make([]byte, len(ints))
	for i, v := range ints {
		if v < 0 || v > 255 {
			return nil, ErrNotKeypair
		}
		b[i] = byte(v)
	}
	return CheckPair(b)
}

// CheckPair returns the 64-byte key b when its public half is its seed's.
func CheckPair(b []byte) (ed25519.PrivateKey, error) {
	k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
	if !bytes.Equal(k[ed25519.SeedSize:], b[ed25519.SeedSize:]) {
		return nil, ErrMismatchedKeypair
	}
	return k, nil
}

// Keypair reads the Solana CLI keypair file at path.
func Keypair(path string) (ed25519.PrivateKey, error) {
	b, err := Read(path, KeypairMax)
	if err != nil {
		return nil, err
	}
	k, err := ParseKeypair(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}
