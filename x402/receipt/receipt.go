package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/keyfile"
)

// Extension is the x402 extension a receipt travels in:
// SettleResponse.extensions["offer-receipt"].info.receipt.
const Extension = "offer-receipt"

// Format is the only receipt format this package speaks.
const Format = "jws"

// Version is the receipt payload version.
const Version = 1

// MaxLength bounds a receipt (the compact JWS) accepted for verification.
const MaxLength = 4096

// Payload is what a receipt says. Field order is JCS order (sorted keys).
type Payload struct {
	Amount         string `json:"amount"`         // atomic units of Asset
	Asset          string `json:"asset"`          // the mint
	IssuedAt       int64  `json:"issuedAt"`       // Unix seconds
	Network        string `json:"network"`        // CAIP-2
	Payer          string `json:"payer"`          // the paying wallet
	PayTo          string `json:"payTo"`          // the receiving wallet
	RequestDigest  string `json:"requestDigest"`  // hex SHA-256 request fingerprint
	ResourceURL    string `json:"resourceUrl"`    // the paid resource
	ResponseDigest string `json:"responseDigest"` // hex SHA-256 of the answer body
	Transaction    string `json:"transaction"`    // the settled transaction's signature
	Version        int    `json:"version"`
}

// Signed is a receipt as it travels: {"format": "jws", "signature": JWS}.
type Signed struct {
	Format    string `json:"format"`
	Signature string `json:"signature"`
}

// ExtensionInfo is the extension's member of SettleResponse.extensions.
type ExtensionInfo struct {
	Info struct {
		Receipt Signed `json:"receipt"`
	} `json:"info"`
}

// Wrap puts a compact JWS in the extension's shape.
func Wrap(jws string) ExtensionInfo {
	var e ExtensionInfo
	e.Info.Receipt = Signed{Format: Format, Signature: jws}
	return e
}

// header is the JWS protected header.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ,omitempty"`
}

// Signer signs receipts with one Ed25519 key. It is safe for concurrent use.
type Signer struct {
	key       ed25519.PrivateKey
	kid       string
	did       string
	headerB64 string
	jwk       JWK
}

// JWK is a public Ed25519 key (RFC 8037).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is a key set (RFC 7517).
type JWKS struct {
	Keys []JWK `json:"keys"`
}

var b64 = base64.RawURLEncoding

// DID is the did:web identifier of an origin: did:web:host (a port is
// percent-encoded, as did:web requires).
func DID(origin config.Origin) string {
	return "did:web:" + strings.ReplaceAll(url.PathEscape(origin.Host), ":", "%3A")
}

// Thumbprint is the RFC 7638 thumbprint of an Ed25519 public key, base64url.
func Thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// NewSigner makes a signer for key; origin (the node's public origin)
// names the key: kid = did:web:<host>#<RFC 7638 thumbprint>.
func NewSigner(key ed25519.PrivateKey, origin config.Origin) (*Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("receipt: the key must be an Ed25519 private key")
	}
	if origin.IsZero() {
		return nil, errors.New("receipt: a public origin is required to name the receipt key")
	}
	pub := key.Public().(ed25519.PublicKey)
	did := DID(origin)
	kid := did + "#" + Thumbprint(pub)
	h, err := json.Marshal(header{Alg: "EdDSA", Kid: kid})
	if err != nil {
		return nil, err
	}
	return &Signer{key: key, kid: kid, did: did, headerB64: b64.EncodeToString(h),
		jwk: JWK{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(pub), Kid: kid, Alg: "EdDSA", Use: "sig"}}, nil
}

// KeyID is the kid of the signer's receipts.
func (s *Signer) KeyID() string { return s.kid }

// PublicKey is the signer's public key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// JWKS is the key set that verifies the signer's receipts.
func (s *Signer) JWKS() JWKS { return JWKS{Keys: []JWK{s.jwk}} }

// DIDDocument is the did:web document of the origin naming the key.
func (s *Signer) DIDDocument() map[string]any {
	return map[string]any{
		"@context":           []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"},
		"id":                 s.did,
		"verificationMethod": []map[string]any{{"id": s.kid, "type": "JsonWebKey2020", "controller": s.did, "publicKeyJwk": s.jwk}},
		"assertionMethod":    []string{s.kid},
	}
}

// Sign returns the compact JWS of p.
func (s *Signer) Sign(p Payload) (string, error) {
	body, err := Canonical(p)
	if err != nil {
		return "", err
	}
	n := len(s.headerB64) + 1 + b64.EncodedLen(len(body))
	buf := make([]byte, n, n+1+b64.EncodedLen(ed25519.SignatureSize))
	copy(buf, s.headerB64)
	buf[len(s.headerB64)] = '.'
	b64.Encode(buf[len(s.headerB64)+1:], body)
	sig := ed25519.Sign(s.key, buf)
	buf = append(buf, '.')
	buf = b64.AppendEncode(buf, sig)
	return string(buf), nil
}

// Canonical is the JCS form of p: Payload's fields are declared in key
// order, hold only strings and integers, and are written without HTML
// escaping, which is RFC 8785 for these values.
func Canonical(p Payload) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("receipt: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Errors of Verify.
var (
	ErrMalformed  = errors.New("receipt: malformed")
	ErrUnknownKey = errors.New("receipt: signed by a key that is not the service's")
	ErrSignature  = errors.New("receipt: signature does not verify")
)

// Parse decodes a compact JWS without verifying it: its header and payload.
func Parse(jws string) (kid string, p Payload, err error) {
	if len(jws) > MaxLength {
		return "", p, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxLength)
	}
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return "", p, fmt.Errorf("%w: want header.payload.signature", ErrMalformed)
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return "", p, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil {
		return "", p, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if h.Alg != "EdDSA" {
		return "", p, fmt.Errorf("%w: alg %q, want EdDSA", ErrMalformed, excerpt.Of(h.Alg, 80))
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return "", p, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	dec := json.NewDecoder(bytes.NewReader(pb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return "", p, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	if p.Version != Version {
		return "", p, fmt.Errorf("%w: version %d, want %d", ErrMalformed, p.Version, Version)
	}
	return h.Kid, p, nil
}

// Verify checks a compact JWS against keys (a JWKS, as published) and
// returns its payload.
func Verify(jws string, keys JWKS) (Payload, error) {
	kid, p, err := Parse(jws)
	if err != nil {
		return p, err
	}
	var pub ed25519.PublicKey
	for _, k := range keys.Keys {
		if k.Kid != kid || k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := b64.DecodeString(k.X)
		if err == nil && len(x) == ed25519.PublicKeySize {
			pub = x
		}
	}
	if pub == nil {
		return p, fmt.Errorf("%w (kid %q)", ErrUnknownKey, excerpt.Of(kid, 80))
	}
	i := strings.LastIndexByte(jws, '.')
	sig, err := b64.DecodeString(jws[i+1:])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return p, fmt.Errorf("%w: bad signature encoding", ErrMalformed)
	}
	if !ed25519.Verify(pub, []byte(jws[:i]), sig) {
		return p, ErrSignature
	}
	return p, nil
}

// Digest is the hex SHA-256 of b, as receipts carry digests.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Time is IssuedAt as a time.
func (p Payload) Time() time.Time { return time.Unix(p.IssuedAt, 0).UTC() }

// Environment variables of the receipt key.
const (
	EnvKey     = "ATTESTD_X402_RECEIPT_KEY"
	EnvKeyFile = "ATTESTD_X402_RECEIPT_KEY_FILE"
)

// ParseKey reads an Ed25519 private key: a Solana CLI keypair (a JSON
// array of 64 bytes), or base64 (standard or URL alphabet) of a 32-byte
// seed or a 64-byte key.
func ParseKey(text []byte) (ed25519.PrivateKey, error) {
	t := bytes.TrimSpace(text)
	if len(t) > 0 && t[0] == '[' {
		return keyfile.ParseKeypair(t)
	}
	s := strings.TrimRight(string(t), "=")
	raw, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, errors.New("want base64 of a 32-byte Ed25519 seed (openssl rand -base64 32), or a Solana CLI keypair file")
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		return keyfile.CheckPair(raw)
	}
	return nil, fmt.Errorf("want a 32-byte seed or a 64-byte key, got %d bytes", len(raw))
}

// KeyFromEnv reads the receipt key from EnvKey or EnvKeyFile (nil, nil:
// neither is set; both set is an error).
func KeyFromEnv(getenv func(string) string) (ed25519.PrivateKey, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	v, f := getenv(EnvKey), getenv(EnvKeyFile)
	switch {
	case v != "" && f != "":
		return nil, fmt.Errorf("set one of %s and %s, not both", EnvKey, EnvKeyFile)
	case v != "":
		k, err := ParseKey([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKey, err)
		}
		return k, nil
	case f != "":
		b, err := keyfile.Read(f, 16<<10)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeyFile, err)
		}
		k, err := ParseKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", EnvKeyFile, f, err)
		}
		return k, nil
	}
	return nil, nil
}
