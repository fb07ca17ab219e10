package httpapi

import (
	"encoding/hex"
	"strings"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/mr-tron/base58"
)

// ParseAddress parses a base58 Solana address and returns its canonical
// form; name is the parameter's name for the message.
func ParseAddress(name, v string) (string, error) {
	if _, err := attestation.ParseAddress(v); err != nil {
		return "", apierror.Invalid("%s must be a base58 Solana address (32 bytes): %v", name, err)
	}
	// Base58 has one spelling per byte string (leading '1's are the
	// leading zero bytes, the rest a number without leading zeros), so a
	// string that decodes to 32 bytes is already their canonical form
	// (FuzzParseAddressIsCanonical): copy it rather than encode again.
	return strings.Clone(v), nil
}

// ParseActionType parses an actionType parameter (400 in the envelope
// when it names no action type).
func ParseActionType(v string) (attestation.ActionType, error) {
	t, err := attestation.ParseActionType(v)
	if err != nil {
		return 0, apierror.Invalid("actionType must be one of %s, got %q", strings.Join(attestation.ActionTypeNames(), ", "), v)
	}
	return t, nil
}

// ParseActionHash parses an actionHash parameter: a SHA-256 as 64
// hexadecimal characters (either case; the lists write lowercase). v may
// be the request's bytes: it is not kept.
func ParseActionHash[V ~string | ~[]byte](v V) ([32]byte, error) {
	var h [32]byte
	if len(v) != 64 {
		return h, apierror.Invalid("actionHash must be a SHA-256 in 64 hexadecimal characters, got %d characters", len(v))
	}
	if _, err := hex.Decode(h[:], []byte(v)); err != nil {
		return h, apierror.Invalid("actionHash must be a SHA-256 in 64 hexadecimal characters (0-9, a-f)")
	}
	return h, nil
}

// Lengths of the base58 text of a transaction signature (64 bytes).
const (
	minSignatureLen = 64
	maxSignatureLen = 88
)

// ParseTxSignature parses a txSignature parameter: a transaction
// signature in base58 (64 bytes). Base58 spells each byte string one
// way, so the text returned (a copy) is the canonical form.
func ParseTxSignature[V ~string | ~[]byte](v V) (string, error) {
	if len(v) < minSignatureLen || len(v) > maxSignatureLen {
		return "", apierror.Invalid("txSignature must be a transaction signature: 64 to 88 base58 characters, got %d", len(v))
	}
	b, err := base58.Decode(string(v))
	if err != nil || len(b) != 64 {
		return "", apierror.Invalid("txSignature must be a transaction signature: base58 of 64 bytes")
	}
	return string(v), nil
}
