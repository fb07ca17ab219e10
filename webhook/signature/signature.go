package signature

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names.
const (
	HeaderService   = "x-service-signature"
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret (the Standard Webhooks form).
const SecretPrefix = "whsec_"

// SecretBytes is how many random bytes a new secret holds.
const SecretBytes = 32

// DefaultTolerance is how far a timestamp may be from now for Verify.
const DefaultTolerance = 5 * time.Minute

// NewSecret returns "whsec_" + base64 of 32 random bytes.
func NewSecret() (string, error) {
	var b [SecretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// Key decodes a secret to the bytes Standard Webhooks signatures are keyed
// with: the base64 after the optional "whsec_" prefix.
func Key(secret string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(b) == 0 {
		return nil, errors.New("secret is not whsec_ followed by base64")
	}
	return b, nil
}

// Signer signs deliveries: with one secret (NewSigner), or with what
// Keys describes (NewSignerWith: a rotation's overlap, Ed25519).
type Signer struct {
	v1     bool
	secret []byte // the string as shown, for x-service-signature
	key    []byte // decoded, for webhook-signature
	// prevSecret and prevKey are the previous secret's, signed with
	// (too) before prevUntil.
	prevSecret, prevKey []byte
	prevUntil           time.Time
	ed                  ed25519.PrivateKey // nil: no v1a entry
}

// NewSigner returns a signer for secret.
func NewSigner(secret string) (*Signer, error) {
	key, err := Key(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{v1: true, secret: []byte(secret), key: key}, nil
}

// Keys is what NewSignerWith signs with.
type Keys struct {
	// V1: HMAC signatures with Secret (and Previous during the overlap),
	// and the x-service-signature header. Without it only v1a entries
	// are sent and Secret may be empty.
	V1     bool
	Secret string
	// Previous is the secret before a rotation ("" none): until
	// PreviousUntil, webhook-signature carries a v1 entry for each
	// secret and x-service-signature is still made with Previous.
	Previous      string
	PreviousUntil time.Time
	// Ed25519 adds a v1a entry (nil: none).
	Ed25519 ed25519.PrivateKey
}

// NewSignerWith returns a signer for k.
func NewSignerWith(k Keys) (*Signer, error) {
	s := &Signer{v1: k.V1, ed: k.Ed25519}
	if k.V1 {
		key, err := Key(k.Secret)
		if err != nil {
			return nil, err
		}
		s.secret, s.key = []byte(k.Secret), key
		if k.Previous != "" {
			pk, err := Key(k.Previous)
			if err != nil {
				return nil, fmt.Errorf("previous secret: %w", err)
			}
			s.prevSecret, s.prevKey, s.prevUntil = []byte(k.Previous), pk, k.PreviousUntil
		}
	}
	if !k.V1 && k.Ed25519 == nil {
		return nil, errors.New("a signer needs v1 or an Ed25519 key")
	}
	if k.Ed25519 != nil && len(k.Ed25519) != ed25519.PrivateKeySize {
		return nil, errors.New("Ed25519 private key of the wrong size")
	}
	return s, nil
}

// overlap reports whether the previous secret is still signed with at now.
func (s *Signer) overlap(now time.Time) bool {
	return s.prevKey != nil && now.Before(s.prevUntil)
}

// Service returns the x-service-signature value: "sha256=" and the hex
// HMAC-SHA256 of body keyed with the secret string.
func (s *Signer) Service(body []byte) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Standard returns the webhook-signature value for message id at
// timestamp ts (Unix seconds): "v1," and the base64 HMAC-SHA256 of
// "id.ts.body" keyed with the decoded secret.
func (s *Signer) Standard(id string, ts int64, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(s.key, id, ts, body))
}

func standardMAC(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Set puts the headers on h for a delivery of body with message id, sent
// at now: webhook-id, webhook-timestamp, webhook-signature (a
// space-separated list: "v1,..." for the secret, and for the previous
// one during a rotation's overlap; "v1a,..." with an Ed25519 key), and
// with v1 x-service-signature (made with the previous secret during the
// overlap, so receivers of that header switch when it ends).
func (s *Signer) Set(h http.Header, id string, now time.Time, body []byte) {
	ts := now.Unix()
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	var sigs []string
	if s.v1 {
		sigs = append(sigs, s.Standard(id, ts, body))
		service := s.secret
		if s.overlap(now) {
			sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(standardMAC(s.prevKey, id, ts, body)))
			service = s.prevSecret
		}
		m := hmac.New(sha256.New, service)
		m.Write(body)
		h.Set(HeaderService, "sha256="+hex.EncodeToString(m.Sum(nil)))
	} else {
		h.Del(HeaderService)
	}
	if s.ed != nil {
		sigs = append(sigs, "v1a,"+base64.StdEncoding.EncodeToString(ed25519.Sign(s.ed, signedContent(id, ts, body))))
	}
	h.Set(HeaderSignature, strings.Join(sigs, " "))
}

// signedContent is what v1a signs: "id.ts.body".
func signedContent(id string, ts int64, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(body)+24)
	b = append(b, id...)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, '.')
	return append(b, body...)
}

// Ed25519 key forms of Standard Webhooks.
const (
	PublicKeyPrefix = "whpk_"
	SecretKeyPrefix = "whsk_"
)

// NewEd25519 returns a new Ed25519 key pair: the private key and the
// public key in its published form, "whpk_" and base64.
func NewEd25519() (ed25519.PrivateKey, string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("new Ed25519 key: %w", err)
	}
	return priv, PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub), nil
}

// PublicKeyOf is the published form of priv's public key.
func PublicKeyOf(priv ed25519.PrivateKey) string {
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
}

// ParsePublicKey reads "whpk_" and base64 of 32 bytes.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, PublicKeyPrefix))
	if err != nil || !strings.HasPrefix(s, PublicKeyPrefix) || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("public key is not whpk_ followed by base64 of 32 bytes")
	}
	return ed25519.PublicKey(b), nil
}

// VerifyV1a checks a delivery's "v1a," signatures with the webhook's
// public key (whpk_...), and its timestamp as Verify does.
func VerifyV1a(publicKey string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	pub, err := ParsePublicKey(publicKey)
	if err != nil {
		return err
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || ts < now.Add(-tolerance).Unix() || ts > now.Add(tolerance).Unix() {
		return ErrTimestamp
	}
	msg := signedContent(id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1a" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && len(got) == ed25519.SignatureSize && ed25519.Verify(pub, msg, got) {
			return nil
		}
	}
	return ErrSignature
}

// Verification errors.
var (
	ErrMissingHeaders = errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp      = errors.New("webhook-timestamp is not a time within the tolerance")
	ErrSignature      = errors.New("no webhook-signature matches")
)

// Verify checks a delivery the Standard Webhooks way: a timestamp within
// tolerance of now (0: DefaultTolerance) and at least one "v1,"
// signature in the space-separated webhook-signature list that matches,
// compared in constant time.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := Key(secret)
	if err != nil {
		return err
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || ts < now.Add(-tolerance).Unix() || ts > now.Add(tolerance).Unix() {
		return ErrTimestamp
	}
	want := standardMAC(key, id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// VerifyService checks an x-service-signature value against body.
func VerifyService(secret, value string, body []byte) error {
	got, err := hex.DecodeString(strings.TrimPrefix(value, "sha256="))
	if err != nil || !strings.HasPrefix(value, "sha256=") {
		return ErrSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrSignature
	}
	return nil
}
