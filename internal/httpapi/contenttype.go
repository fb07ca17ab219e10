package httpapi

import (
	"mime"
	"net/http"

	"github.com/attestd/attestd/internal/apierror"
)

// IsJSON reports whether a Content-Type is application/json (any
// parameters).
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// RequireJSON is nil when contentType is application/json (IsJSON), and
// otherwise the 415 that asks for it; example (may be empty) shows the
// body expected, as in `{"ids": [...]}`.
func RequireJSON(contentType, example string) error {
	if IsJSON(contentType) {
		return nil
	}
	msg := "send the body as application/json"
	if example != "" {
		msg += ": " + example
	}
	return apierror.New(http.StatusUnsupportedMediaType, apierror.CodeUnsupportedMedia, "%s", msg)
}
