package translog

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"net/url"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/keyfile"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_LOG_KEY", Default: "(none: the log is off)", Help: "the transparency log's key: its private key (PRIVATE+KEY+…, from attestd log keygen) on the process that appends (attestd index), or only its verifier key (name+hash+base64) on API nodes; during a key rotation, the new and the old key separated by a comma (same name: every key signs each checkpoint, the first is the new one); the key's name is the log's origin, and the checkpoint and tiles are served at its path; unset: the log is off"},
	{Name: "ATTESTD_LOG_KEY_FILE", Default: "(none)", Help: "a file holding ATTESTD_LOG_KEY's value (either kind; one key per line during a rotation); set one of the two"},
	{Name: "ATTESTD_LOG_WITNESSES", Default: "(none: the log is not witnessed)", Help: "the witnesses that cosign each checkpoint (C2SP tlog-witness): for each, its verifier key (name+keyid+base64, as litewitness prints it), a space and its add-checkpoint URL; separated by commas. The same on every process: attestd index submits checkpoints, API nodes serve the ones the quorum cosigned"},
	{Name: "ATTESTD_LOG_WITNESS_QUORUM", Default: "(a majority of the witnesses)", Help: "k: a checkpoint is served (at the origin, in proofs) once k of the witnesses cosigned it; until then the last one that was (fail-closed); 1 to n"},
	{Name: "ATTESTD_LOG_TILE_RATE", Default: "50", Help: "requests per second one client IP may make to the log's checkpoint and tiles on one node (a burst of 10 times that is allowed); they are outside the API's limit; 0: no limit"},
	{Name: "ATTESTD_LOG_CHECKPOINT_INTERVAL", Default: "2s", Help: "while the log grows, a checkpoint is signed at most this often"},
	{Name: "ATTESTD_LOG_BATCH", Default: "5000", Help: "most leaves one append transaction adds"},
	{Name: "ATTESTD_LOG_POLL_INTERVAL", Default: "200ms", Help: "how often an idle appender looks for newly finalized attestations"},
}

// Config configures the log.
type Config struct {
	// Key is the log's key; the zero Key means the log is off.
	Key Key
	// Rotating holds the other keys of a rotation: same name (the
	// origin), each signs every checkpoint too (Key is the new one).
	Rotating []Key
	// TileRate is the requests per second one client IP may make to the
	// checkpoint and tiles on one node (0: unlimited).
	TileRate int
	// Witnesses cosign each checkpoint; Quorum of them must have for a
	// checkpoint to be served (0 with no witnesses: every checkpoint).
	Witnesses []Witness
	Quorum    int
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
		TileRate:           e.Int("ATTESTD_LOG_TILE_RATE", 50, 0, 1000000),
	}
	text, from := e.String("ATTESTD_LOG_KEY", ""), "ATTESTD_LOG_KEY"
	if file := e.String("ATTESTD_LOG_KEY_FILE", ""); file != "" {
		from = "ATTESTD_LOG_KEY_FILE (" + file + ")"
		if text != "" {
			e.Fail("ATTESTD_LOG_KEY_FILE", "set ATTESTD_LOG_KEY or ATTESTD_LOG_KEY_FILE, not both")
		} else if b, err := readKeyFile(file); err != nil {
			e.Fail("ATTESTD_LOG_KEY_FILE", "%v", err)
		} else {
			text = b
		}
	}
	if w := e.String("ATTESTD_LOG_WITNESSES", ""); w != "" {
		ws, err := ParseWitnesses(w)
		if err != nil {
			e.Fail("ATTESTD_LOG_WITNESSES", "%v", err)
		}
		c.Witnesses = ws
	}
	c.Quorum = len(c.Witnesses)/2 + 1
	if len(c.Witnesses) == 0 {
		c.Quorum = 0
	}
	if e.String("ATTESTD_LOG_WITNESS_QUORUM", "") != "" {
		if len(c.Witnesses) == 0 {
			e.Fail("ATTESTD_LOG_WITNESS_QUORUM", "set without ATTESTD_LOG_WITNESSES")
		} else {
			c.Quorum = e.Int("ATTESTD_LOG_WITNESS_QUORUM", c.Quorum, 1, len(c.Witnesses))
		}
	}
	if text != "" {
		keys, err := ParseKeys(text)
		if err != nil {
			e.Fail(from, "%v", err) // never echo the value: it may be a private key
		} else {
			c.Key, c.Rotating = keys[0], keys[1:]
		}
	}
	return c, e.Err()
}

// Keys is every key of the log: Key, then the Rotating ones.
func (c Config) Keys() []Key { return append([]Key{c.Key}, c.Rotating...) }

// Origin is the log's origin: its keys' name.
func (c Config) Origin() string { return c.Key.Name }

// Verifiers verify the log's own signatures: one per key.
func (c Config) Verifiers() note.Verifiers {
	vs := make([]note.Verifier, 0, 1+len(c.Rotating))
	for _, k := range c.Keys() {
		vs = append(vs, k.Verifier)
	}
	return note.VerifierList(vs...)
}

// ParseKeys reads one key or several (separated by commas or newlines):
// a log's keys during a rotation. They must share one name (the log's
// origin, which a rotation keeps), be distinct, and be all private or all
// verifier keys; the first is the newest.
func ParseKeys(text string) ([]Key, error) {
	var keys []Key
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if len(keys) == 8 {
			return nil, errors.New("more than 8 keys: a rotation needs two")
		}
		k, err := ParseKey(part)
		if err != nil {
			if len(keys) > 0 {
				return nil, fmt.Errorf("key %d: %w", len(keys)+1, err)
			}
			return nil, err
		}
		for _, o := range keys {
			switch {
			case o.Name != k.Name:
				return nil, fmt.Errorf("the keys name two origins (%q and %q): a rotation keeps the log's origin, so a new key has the old one's name (attestd log keygen --name %s)", o.Name, k.Name, o.Name)
			case o.VerifierKey == k.VerifierKey:
				return nil, fmt.Errorf("key %s is given twice", k.VerifierKey)
			case o.CanSign() != k.CanSign():
				return nil, errors.New("mixes private and verifier keys: give the private keys where attestd index runs, the verifier keys elsewhere")
			}
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	if _, err := OriginPath(keys[0].Name); err != nil {
		return nil, err
	}
	return keys, nil
}

// OriginPath is the path at which a log of this origin serves its
// checkpoint and tiles (C2SP tlog-tiles: the origin is the URL prefix
// without the scheme): "example.com/log" serves at "/log", so
// https://example.com/log/checkpoint. The origin must be a host, then an
// optional path of plain segments outside the API's prefix.
func OriginPath(origin string) (string, error) {
	host, path, _ := strings.Cut(origin, "/")
	name, port, hasPort := strings.Cut(host, ":")
	if name == "" || !plainSegment(name) || (hasPort && (port == "" || strings.Trim(port, "0123456789") != "")) {
		return "", fmt.Errorf("the log's origin %q is not a URL prefix without its scheme (host/path, for example attestd.example.com/log): the key's name is the origin", origin)
	}
	if path == "" {
		return "", fmt.Errorf("the log's origin %q has no path: name the key host/log (attestd log keygen --name %s/log), and the log is served at https://%s/log/", origin, host, host)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." || !plainSegment(seg) {
			return "", fmt.Errorf("the log's origin %q has a path segment %q that is not plain (letters, digits, - . _ ~)", origin, seg)
		}
	}
	if p := "/" + strings.ToLower(path); p == "/api" || strings.HasPrefix(p, "/api/") {
		return "", fmt.Errorf("the log's origin %q is under /api, the API's own prefix: name it host/log", origin)
	}
	return "/" + path, nil
}

func plainSegment(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	return true
}

// readKeyFile reads a key file: at most 4 KiB (a key is one line),
// surrounding space ignored.
func readKeyFile(name string) (string, error) {
	b, err := keyfile.Read(name, 4<<10)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
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

// Witness is one witness of the log: its cosignature verifier key and
// where it takes checkpoints (C2SP tlog-witness add-checkpoint).
type Witness struct {
	Name        string
	VerifierKey string
	Verifier    *logformat.CosignatureVerifier
	URL         string // the add-checkpoint URL
}

// ParseWitnesses reads ATTESTD_LOG_WITNESSES: "<vkey> <url>" pairs,
// separated by commas or newlines; names and keys distinct, at most 32.
func ParseWitnesses(text string) ([]Witness, error) {
	var out []Witness
	for _, item := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '\n' }) {
		fields := strings.Fields(item)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("witness %d: want its verifier key, a space and its add-checkpoint URL", len(out)+1)
		}
		v, err := logformat.ParseCosignatureKey(fields[0])
		if err != nil {
			return nil, fmt.Errorf("witness %d: %w", len(out)+1, err)
		}
		u, err := url.Parse(fields[1])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return nil, fmt.Errorf("witness %s: its add-checkpoint URL must be an absolute http(s) URL", v.Name())
		}
		for _, o := range out {
			if o.Name == v.Name() || o.VerifierKey == fields[0] {
				return nil, fmt.Errorf("witness %s is listed twice", v.Name())
			}
		}
		if len(out) == 32 {
			return nil, errors.New("more than 32 witnesses")
		}
		out = append(out, Witness{Name: v.Name(), VerifierKey: fields[0], Verifier: v, URL: u.String()})
	}
	return out, nil
}
