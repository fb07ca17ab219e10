package x402

import (
	"encoding/json"
)

// ExtensionPaymentIdentifier names the payment-identifier extension: a
// client-chosen id in PaymentPayload.extensions["payment-identifier"].info.id
// that makes a payment idempotent (the same id with the same payment gets
// the same answer; with another payment, a conflict).
const ExtensionPaymentIdentifier = "payment-identifier"

// Bounds of a payment identifier (the extension's schema).
const (
	PaymentIDMinLength = 16
	PaymentIDMaxLength = 128
)

// PaymentIdentifierDeclaration is the extension as a 402 declares it (the
// extension's spec: info.required, and the JSON Schema of info): clients
// echo it and add info.id (the official appendPaymentIdentifierToExtensions
// adds an id only when the 402 declares the extension).
var PaymentIdentifierDeclaration = json.RawMessage(`{"info":{"required":false},"schema":{` +
	`"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{` +
	`"required":{"type":"boolean"},"id":{"type":"string","minLength":16,"maxLength":128,"pattern":"^[a-zA-Z0-9_-]+$"}},` +
	`"required":["required"]}}`)

// PaymentIdentifier returns the payment-identifier extension's id ("" when
// the payload has none: no extension, or the 402's declaration echoed
// without an id). A present but malformed extension (no info object, an
// id that is not a string of 16 to 128 of A-Za-z0-9_-) is an
// invalid_payload error.
func PaymentIdentifier(p *PaymentPayload) (string, error) {
	raw, ok := p.Extensions[ExtensionPaymentIdentifier]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var ext struct {
		Info *struct {
			ID *json.RawMessage `json:"id"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &ext); err != nil || ext.Info == nil {
		return "", fail(ReasonInvalidPayload, "the %s extension must be {\"info\": {\"id\": \"...\"}}", ExtensionPaymentIdentifier)
	}
	if ext.Info.ID == nil || string(*ext.Info.ID) == "null" {
		return "", nil // the declaration echoed: no id chosen
	}
	var id string
	if err := json.Unmarshal(*ext.Info.ID, &id); err != nil || len(id) < PaymentIDMinLength || len(id) > PaymentIDMaxLength || !idChars(id) {
		return "", fail(ReasonInvalidPayload, "the %s id must be %d to %d characters of A-Z, a-z, 0-9, - and _",
			ExtensionPaymentIdentifier, PaymentIDMinLength, PaymentIDMaxLength)
	}
	return id, nil
}

func idChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
