package logformat

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Cosignatures (C2SP tlog-cosignature, Ed25519 "cosignature/v1"): a
// witness's statement that, at a time, the checkpoint is the largest
// consistent tree it has seen of the log. Its note signature is the
// big-endian 64-bit timestamp then the Ed25519 signature of
//
//	cosignature/v1
//	time <timestamp>
//	<the checkpoint's note text>
//
// and its key ID is SHA-256(name || "\n" || 0x04 || public key)[:4].

// algCosignatureV1 is the signature type of Ed25519 cosignatures in
// verifier keys and key IDs.
const algCosignatureV1 = 0x04

// CosignatureVerifier checks one witness's cosignatures; it is a
// note.Verifier, so it mixes with the log's own keys in note.Open.
type CosignatureVerifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
	text string
}

// ParseCosignatureKey reads a witness's verifier key,
// <name>+<key ID hex>+<base64(0x04 || Ed25519 public key)>, as litewitness
// prints it.
func ParseCosignatureKey(vkey string) (*CosignatureVerifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hexID, b64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" || len(vkey) > 512 || strings.ContainsAny(name, " \t\n+") || len(hexID) != 8 {
		return nil, errors.New("not a cosignature verifier key (name+keyid+base64)")
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != algCosignatureV1 {
		return nil, errors.New("not an Ed25519 cosignature key (type 0x04, C2SP tlog-cosignature)")
	}
	pub := ed25519.PublicKey(raw[1:])
	id := cosignatureKeyID(name, pub)
	if want, err := hex.DecodeString(hexID); err != nil || binary.BigEndian.Uint32(want) != id {
		return nil, errors.New("the key ID of the cosignature key does not match its name and key")
	}
	return &CosignatureVerifier{name: name, hash: id, pub: pub, text: vkey}, nil
}

// NewCosignatureKey is the verifier key of a witness named name with
// Ed25519 public key pub.
func NewCosignatureKey(name string, pub ed25519.PublicKey) string {
	var id [4]byte
	binary.BigEndian.PutUint32(id[:], cosignatureKeyID(name, pub))
	return name + "+" + hex.EncodeToString(id[:]) + "+" + base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, pub...))
}

func cosignatureKeyID(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{algCosignatureV1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Name is the witness's name (note.Verifier).
func (v *CosignatureVerifier) Name() string { return v.name }

// KeyHash is the key ID (note.Verifier).
func (v *CosignatureVerifier) KeyHash() uint32 { return v.hash }

// String is the verifier key text.
func (v *CosignatureVerifier) String() string { return v.text }

// Verify checks a cosignature of msg, a note's text (note.Verifier).
func (v *CosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig)
	if ts == 0 || ts > 1<<63-1 {
		return false
	}
	return ed25519.Verify(v.pub, cosignedMessage(ts, msg), sig[8:])
}

func cosignedMessage(ts uint64, text []byte) []byte {
	m := make([]byte, 0, 40+len(text))
	m = append(m, "cosignature/v1\ntime "...)
	m = strconv.AppendUint(m, ts, 10)
	m = append(m, '\n')
	return append(m, text...)
}

// CosignatureTime is when a cosignature (its note signature bytes, key ID
// stripped) says it was made.
func CosignatureTime(sig []byte) (time.Time, bool) {
	if len(sig) != 8+ed25519.SignatureSize {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint64(sig)), 0), true
}

// CosignatureSigner makes cosignatures (tests, and witnesses of our own
// making): a note.Signer.
type CosignatureSigner struct {
	CosignatureVerifier
	priv ed25519.PrivateKey
	now  func() time.Time
}

// NewCosignatureSigner signs cosignatures as the witness name with priv.
func NewCosignatureSigner(name string, priv ed25519.PrivateKey) *CosignatureSigner {
	pub := priv.Public().(ed25519.PublicKey)
	v, _ := ParseCosignatureKey(NewCosignatureKey(name, pub))
	return &CosignatureSigner{CosignatureVerifier: *v, priv: priv, now: time.Now}
}

// Sign cosigns msg, a note's text (note.Signer).
func (s *CosignatureSigner) Sign(msg []byte) ([]byte, error) {
	ts := uint64(s.now().Unix())
	sig := binary.BigEndian.AppendUint64(nil, ts)
	return append(sig, ed25519.Sign(s.priv, cosignedMessage(ts, msg))...), nil
}

var (
	_ note.Verifier = (*CosignatureVerifier)(nil)
	_ note.Signer   = (*CosignatureSigner)(nil)
)
