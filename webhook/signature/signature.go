package signature

import (
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

// Signer signs deliveries for one secret.
type Signer struct {
	secret []byte // the string as shown, for x-service-signature
	key    []byte // decoded, for webhook-signature
}

// NewSigner returns a signer for secret.
func NewSigner(secret string) (*Signer, error) {
	key, err := Key(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{secret: []byte(secret), key: key}, nil
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

// Set puts all four headers on h for a delivery of body with message id,
// sent at now.
func (s *Signer) Set(h http.Header, id string, now time.Time, body []byte) {
	ts := now.Unix()
	h.Set(HeaderService, s.Service(body))
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, s.Standard(id, ts, body))
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
