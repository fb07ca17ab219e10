package apierror

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// Codes of the contract.
const (
	CodeInvalidParam        = "INVALID_PARAM"
	CodeUnauthorized        = "UNAUTHORIZED"
	CodeForbidden           = "FORBIDDEN"
	CodePaymentRequired     = "PAYMENT_REQUIRED"
	CodeNotFound            = "NOT_FOUND"
	CodeAttestationNotFound = "ATTESTATION_NOT_FOUND"
	// The attestation exists but has no inclusion proof yet (409): not
	// finalized yet, or finalized and not yet in a signed checkpoint.
	CodeNotFinalized       = "ATTESTATION_NOT_FINALIZED"
	CodeNotLogged          = "ATTESTATION_NOT_LOGGED"
	CodeAgentNotFound      = "AGENT_NOT_FOUND"
	CodeWebhookNotFound    = "WEBHOOK_NOT_FOUND"
	CodeKeyNotFound        = "KEY_NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodePaymentReplayed    = "PAYMENT_REPLAYED"
	CodePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeBatchLimitExceeded = "BATCH_LIMIT_EXCEEDED"
	CodeRateLimited        = "RATE_LIMITED"
	CodeHeadersTooLarge    = "HEADERS_TOO_LARGE"
	CodeRequestTimeout     = "REQUEST_TIMEOUT"
	CodeInternal           = "INTERNAL_ERROR"
	CodeUnavailable        = "UNAVAILABLE"
)

// Error is an API error: an HTTP status, a code and a message for people.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// New returns an API error.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 INVALID_PARAM.
func Invalid(format string, args ...any) *Error {
	return New(http.StatusBadRequest, CodeInvalidParam, format, args...)
}

// NotFound is a 404 with the given *_NOT_FOUND code.
func NotFound(code, format string, args ...any) *Error {
	return New(http.StatusNotFound, code, format, args...)
}

// Forbidden is a 403 FORBIDDEN: the caller is known but may not do this.
func Forbidden(format string, args ...any) *Error {
	return New(http.StatusForbidden, CodeForbidden, format, args...)
}

// Unavailable is a 503: a dependency we need for this answer is down.
func Unavailable(format string, args ...any) *Error {
	return New(http.StatusServiceUnavailable, CodeUnavailable, format, args...)
}

type body struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Body returns the JSON envelope of e.
func Body(code, message string) any {
	var b body
	b.Error.Code, b.Error.Message = code, message
	return b
}

// Write answers the request with the envelope.
func Write(c *fiber.Ctx, status int, code, message string) error {
	return c.Status(status).JSON(Body(code, message))
}

// As extracts an *Error from err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
