package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/attestd/attestd/internal/httpapi"
	"net/http"
	"strings"
	"time"
)

// APIError is a non-2xx answer of the API, decoded from its envelope
// {"error": {"code": "SNAKE_CASE", "message": "..."}}.
type APIError struct {
	Status  int    // HTTP status, e.g. 401, 402, 404, 429
	Code    string // the envelope's code, e.g. AGENT_NOT_FOUND ("" when the body was not the envelope)
	Message string // the envelope's message, or a description of the unexpected body
	// RetryAfter is the Retry-After delay (set on 429, and on 503 when sent).
	RetryAfter time.Duration
	// RequestID is the X-Request-ID of the answer, to quote in support requests.
	RequestID string
	// Method and Path name the call (Path is below the API base).
	Method, Path string
	// Body is the raw response body (at most 64 KiB): the x402 payment
	// instructions of a 402, for example.
	Body []byte
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attestd: %s %s: %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// AsAPIError returns the *APIError in err's chain.
func AsAPIError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}

// StatusOf is the HTTP status of an *APIError in err's chain, 0 otherwise.
func StatusOf(err error) int {
	if e, ok := AsAPIError(err); ok {
		return e.Status
	}
	return 0
}

const maxErrorBody = 64 << 10

func newAPIError(method, path string, status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, Method: method, Path: path, RequestID: h.Get("X-Request-ID"),
		RetryAfter: parseRetryAfter(h.Get("Retry-After"), time.Now())}
	if len(body) > maxErrorBody {
		e.Body = append([]byte(nil), body[:maxErrorBody]...)
	} else {
		e.Body = body
	}
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err == nil && env.Error != nil && (env.Error.Code != "" || env.Error.Message != "") {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		return e
	}
	// Not the envelope (a proxy's page, say): describe it briefly.
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "..."
	}
	e.Message = http.StatusText(status)
	if snippet != "" {
		e.Message += ": unexpected body: " + snippet
	}
	return e
}

// MaxRetryAfter bounds the Retry-After delay the client reads: a longer
// one (or one too large to represent) is read as this.
const MaxRetryAfter = 24 * time.Hour

// parseRetryAfter reads delay-seconds or an HTTP date, at most
// MaxRetryAfter, in whole seconds.
func parseRetryAfter(v string, now time.Time) time.Duration {
	return httpapi.ParseRetryAfter(v, now, MaxRetryAfter).Round(time.Second)
}
