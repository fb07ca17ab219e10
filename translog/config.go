package translog

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
	"golang.org/x/mod/sumdb/note"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_LOG_KEY", Default: "(none: the log is off)", Help: "the transparency log's key: its private key (PRIVATE+KEY+…, from attestd log keygen) on the process that appends (attestd index), or only its verifier key (name+hash+base64) on API nodes; unset: the log is off"},
	{Name: "ATTESTD_LOG_KEY_FILE", Default: "(none)", Help: "a file holding ATTESTD_LOG_KEY's value (either kind); set one of the two"},
	{Name: "ATTESTD_LOG_CHECKPOINT_INTERVAL", Default: "2s", Help: "while the log grows, a checkpoint is signed at most this often"},
	{Name: "ATTESTD_LOG_BATCH", Default: "5000", Help: "most leaves one append transaction adds"},
	{Name: "ATTESTD_LOG_POLL_INTERVAL", Default: "200ms", Help: "how often an idle appender looks for newly finalized attestations"},
}

// Config configures the log.
type Config struct {
	// Key is the log's key; the zero Key means the log is off.
	Key Key
	// CheckpointInterval is the least time between two checkpoints.
	CheckpointInterval time.Duration
	// Batch is the most leaves one append adds.
	Batch int
	// Poll is how often an idle appender looks at the queue.
	Poll time.Duration
}

// Enabled reports whether the log has a key.
func (c Config) Enabled() bool { return c.Key.Name != "" }

// ErrOff explains why log routes answer 503 on a node without a key.
var ErrOff = errors.New("the transparency log is off: set ATTESTD_LOG_KEY (or ATTESTD_LOG_KEY_FILE) to its verifier key on API nodes and to its private key where attestd index runs")

// ConfigFromEnv reads Vars with getenv (the process environment when nil).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		CheckpointInterval: e.Duration("ATTESTD_LOG_CHECKPOINT_INTERVAL", 2*time.Second, 100*time.Millisecond, time.Hour),
		Batch:              e.Int("ATTESTD_LOG_BATCH", 5000, 1, 100000),
		Poll:               e.Duration("ATTESTD_LOG_POLL_INTERVAL", 200*time.Millisecond, 10*time.Millisecond, time.Minute),
	}
	text := e.String("ATTESTD_LOG_KEY", "")
	if file := e.String("ATTESTD_LOG_KEY_FILE", ""); file != "" {
		if text != "" {
			e.Fail("ATTESTD_LOG_KEY_FILE", "set ATTESTD_LOG_KEY or ATTESTD_LOG_KEY_FILE, not both")
		} else if b, err := readKeyFile(file); err != nil {
			e.Fail("ATTESTD_LOG_KEY_FILE", "%v", err)
		} else {
			text = b
		}
	}
	if text != "" {
		k, err := ParseKey(text)
		if err != nil {
			e.Fail("ATTESTD_LOG_KEY", "%v", err) // never echo the value: it may be a private key
		}
		c.Key = k
	}
	return c, e.Err()
}

// readKeyFile reads a key file: at most 4 KiB, one key, surrounding space
// ignored.
func readKeyFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 4097)
	n, _ := f.Read(b)
	if n > 4096 {
		return "", fmt.Errorf("%s: larger than 4 KiB; a key is one line", name)
	}
	return strings.TrimSpace(string(b[:n])), nil
}

// Key is the log's key: always its verifier key; its signer too when
// configured with the private key.
type Key struct {
	// Name is the key's name, which is also the log's origin (the first
	// line of every checkpoint).
	Name string
	// VerifierKey is the verifier key text: name+hash+base64.
	VerifierKey string
	Verifier    note.Verifier
	// Signer is nil when only the verifier key was given.
	Signer note.Signer
}

// CanSign reports whether k holds the private key.
func (k Key) CanSign() bool { return k.Signer != nil }

// ParseKey reads a note private key (PRIVATE+KEY+name+hash+base64, as
// note.GenerateKey writes it) or a verifier key (name+hash+base64). Only
// Ed25519 keys are accepted. Errors never quote the text.
func ParseKey(text string) (Key, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "PRIVATE+KEY+") {
		signer, err := note.NewSigner(text)
		if err != nil {
			return Key{}, errors.New("not a valid note private key (PRIVATE+KEY+name+hash+base64)")
		}
		vkey, err := verifierOf(text)
		if err != nil {
			return Key{}, err
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return Key{}, fmt.Errorf("derive verifier key: %w", err)
		}
		return Key{Name: signer.Name(), VerifierKey: vkey, Verifier: v, Signer: signer}, nil
	}
	v, err := note.NewVerifier(text)
	if err != nil {
		return Key{}, errors.New("neither a note private key (PRIVATE+KEY+…) nor a verifier key (name+hash+base64)")
	}
	return Key{Name: v.Name(), VerifierKey: text, Verifier: v}, nil
}

// verifierOf derives the verifier key of an Ed25519 note private key.
func verifierOf(skey string) (string, error) {
	parts := strings.SplitN(strings.TrimPrefix(skey, "PRIVATE+KEY+"), "+", 3)
	if len(parts) != 3 {
		return "", errors.New("not a valid note private key")
	}
	b, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(b) != 1+ed25519.SeedSize || b[0] != 1 {
		return "", errors.New("not an Ed25519 note private key")
	}
	pub := ed25519.NewKeyFromSeed(b[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(parts[0], pub)
}
