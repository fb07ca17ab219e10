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

// PaymentIdentifier returns the payment-identifier extension's id ("" when
// the payload has none). A present but malformed extension is an
// invalid_payload error.
func PaymentIdentifier(p *PaymentPayload) (string, error) {
	raw, ok := p.Extensions[ExtensionPaymentIdentifier]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var ext struct {
		Info *struct {
			ID *string `json:"id"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &ext); err != nil || ext.Info == nil || ext.Info.ID == nil {
		return "", fail(ReasonInvalidPayload, "the %s extension must be {\"info\": {\"id\": \"...\"}}", ExtensionPaymentIdentifier)
	}
	id := *ext.Info.ID
	if len(id) < PaymentIDMinLength || len(id) > PaymentIDMaxLength || !idChars(id) {
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
