package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/jsonbody"
)

// Size bounds of what is decoded.
const (
	// MaxHeaderSize bounds a base64 header this package decodes. A
	// PAYMENT-SIGNATURE of the reference client is about 1.5 KB; the
	// largest Solana transaction (1232 bytes) with its requirements stays
	// well under this.
	MaxHeaderSize = 8 << 10
	// MaxTransactionSize is Solana's packet limit for one transaction.
	MaxTransactionSize = 1232
	// maxTransactionBase64 is the base64 length of MaxTransactionSize bytes.
	maxTransactionBase64 = (MaxTransactionSize + 2) / 3 * 4
)

// Reasons a payment header is refused before its transaction is looked at.
const (
	ReasonInvalidPayload       = "invalid_payload"
	ReasonInvalidVersion       = "invalid_x402_version"
	ReasonUnsupportedScheme    = "unsupported_scheme"
	ReasonInvalidNetwork       = "invalid_network"
	ReasonRequirementsMismatch = "invalid_payment_requirements"
)

// Error is a refused payment: a machine reason (x402's error codes where
// one fits) and a sentence for people.
type Error struct {
	Reason string
	Detail string
}

func (e *Error) Error() string { return e.Reason + ": " + e.Detail }

func fail(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// AsError extracts an *Error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// EncodeHeader is base64 (standard, padded) of v's JSON.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// decodeHeader bounds, base64-decodes and JSON-decodes a header into v.
// Unknown members are ignored (extensions); trailing data is not.
func decodeHeader(name, h string, v any) error {
	if len(h) == 0 {
		return fail(ReasonInvalidPayload, "the %s header is empty", name)
	}
	if len(h) > MaxHeaderSize {
		return fail(ReasonInvalidPayload, "the %s header is %d bytes; at most %d are accepted", name, len(h), MaxHeaderSize)
	}
	raw, err := decodeBase64(h)
	if err != nil {
		return fail(ReasonInvalidPayload, "the %s header is not standard base64 (%v)", name, err)
	}
	// A member written twice would be read as the last one here and
	// perhaps as the first by a facilitator: refused (any depth).
	if err := jsonbody.Check(raw); err != nil && !errors.Is(err, jsonbody.ErrSyntax) {
		return fail(ReasonInvalidPayload, "the %s header is ambiguous: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fail(ReasonInvalidPayload, "the %s header is not base64 of a JSON object of the expected shape (%v)", name, err)
	}
	if dec.More() {
		return fail(ReasonInvalidPayload, "the %s header holds data after its JSON object", name)
	}
	return nil
}

// decodeBase64 accepts standard base64, padded or not (never URL-safe).
func decodeBase64(s string) ([]byte, error) {
	if len(s)%4 == 0 {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

// DecodePaymentV2 reads a PAYMENT-SIGNATURE header. It checks the shape
// (version 2, scheme exact, a transaction present and within bounds) and
// returns the decoded wire transaction bytes beside the payload.
func DecodePaymentV2(h string) (*PaymentPayload, []byte, error) {
	var p PaymentPayload
	if err := decodeHeader(HeaderPaymentSignature, h, &p); err != nil {
		return nil, nil, err
	}
	if p.X402Version != 2 {
		return nil, nil, fail(ReasonInvalidVersion, "%s carries x402Version %d; this server speaks 2 there (send version 1 payments in %s)",
			HeaderPaymentSignature, p.X402Version, HeaderPaymentV1)
	}
	if p.Accepted.Scheme != SchemeExact {
		return nil, nil, fail(ReasonUnsupportedScheme, "scheme %q is not supported; pay with %q", excerpt.Of(p.Accepted.Scheme, 64), SchemeExact)
	}
	tx, err := decodeTransaction(p.Payload.Transaction)
	if err != nil {
		return nil, nil, err
	}
	return &p, tx, nil
}

// DecodePaymentV1 reads an X-PAYMENT header (x402 v1).
func DecodePaymentV1(h string) (*PaymentPayloadV1, []byte, error) {
	var p PaymentPayloadV1
	if err := decodeHeader(HeaderPaymentV1, h, &p); err != nil {
		return nil, nil, err
	}
	if p.X402Version != 1 {
		return nil, nil, fail(ReasonInvalidVersion, "%s carries x402Version %d; send version 2 payments in %s",
			HeaderPaymentV1, p.X402Version, HeaderPaymentSignature)
	}
	if p.Scheme != SchemeExact {
		return nil, nil, fail(ReasonUnsupportedScheme, "scheme %q is not supported; pay with %q", excerpt.Of(p.Scheme, 64), SchemeExact)
	}
	tx, err := decodeTransaction(p.Payload.Transaction)
	if err != nil {
		return nil, nil, err
	}
	return &p, tx, nil
}

func decodeTransaction(s string) ([]byte, error) {
	if s == "" {
		return nil, fail(ReasonInvalidPayload, "payload.transaction is missing")
	}
	if len(s) > maxTransactionBase64 {
		return nil, fail(ReasonInvalidPayload, "payload.transaction is %d base64 characters; a Solana transaction is at most %d bytes (%d characters)",
			len(s), MaxTransactionSize, maxTransactionBase64)
	}
	b, err := decodeBase64(s)
	if err != nil {
		return nil, fail(ReasonInvalidPayload, "payload.transaction is not standard base64 (%v)", err)
	}
	return b, nil
}

// DecodePaymentRequired reads a PAYMENT-REQUIRED header (for payers).
func DecodePaymentRequired(h string) (*PaymentRequired, error) {
	var p PaymentRequired
	if err := decodeHeader(HeaderPaymentRequired, h, &p); err != nil {
		return nil, err
	}
	if p.X402Version != 2 {
		return nil, fail(ReasonInvalidVersion, "the 402 speaks x402Version %d; this payer speaks 2", p.X402Version)
	}
	if len(p.Accepts) > 32 {
		return nil, fail(ReasonInvalidPayload, "the 402 offers %d ways to pay; at most 32 are read", len(p.Accepts))
	}
	return &p, nil
}

// DecodeSettleResponse reads a PAYMENT-RESPONSE header.
func DecodeSettleResponse(h string) (*SettleResponse, error) {
	var s SettleResponse
	if err := decodeHeader(HeaderPaymentResponse, h, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
