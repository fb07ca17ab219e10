// Package signature signs webhook deliveries and verifies them: the
// x-service-signature header (hex HMAC-SHA256 of the body keyed with the
// secret string exactly as shown, so openssl dgst -hmac verifies it) and
// the Standard Webhooks headers webhook-id, webhook-timestamp and
// webhook-signature (base64 HMAC-SHA256 of "id.timestamp.body" keyed with
// the secret's decoded bytes). Receivers written in Go can import it alone.
//
// Invariant: verification compares in constant time and refuses a
// timestamp outside the tolerance, so a captured delivery cannot be
// replayed later.
package signature
