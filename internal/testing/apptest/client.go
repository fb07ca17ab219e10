package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/attestd/attestd/internal/testing/strict"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Response is a received response whose body was read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d response %q: %v", r.Status, truncate(r.Body), err)
	}
}

// ErrorCode returns the envelope's error code ("" when absent).
func (r *Response) ErrorCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// ErrorMessage returns the envelope's message ("" when absent).
func (r *Response) ErrorMessage() string {
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Message
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// builtRouter builds the validating router once per test binary; tests
// in parallel share it.
var builtRouter = sync.OnceValues(func() (routers.Router, error) {
	// An event stream (GET /attestations/stream) is text: its schema
	// is a string; the events' data is checked by the stream's tests.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	doc, err := openapi.Document()
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi document invalid: %w", err)
	}
	return gorillamux.NewRouter(doc)
})

func openapiRouter(t testing.TB) routers.Router {
	t.Helper()
	r, err := builtRouter()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return r
}

// Main builds the validating router, then runs the package's tests and
// stops the servers they started (testenv.Main). Call it from the TestMain
// of a package whose parallel tests use this client: the router is built
// once, before any test runs (none pays for it inside its own timing), and
// a document that does not build fails the package with one message
// instead of every test.
func Main(m *testing.M) {
	if _, err := builtRouter(); err != nil {
		fmt.Fprintf(os.Stderr, "apptest: the validating router: %v\n", err)
		os.Exit(1)
	}
	testenv.Main(m)
}

// Do sends a request to the node and validates the response against the
// OpenAPI document: a documented route must answer a documented status
// with a body matching its schema; any non-2xx must be the error envelope.
func (n *Node) Do(t testing.TB, method, path string, body []byte, header map[string]string) *Response {
	t.Helper()
	return n.do(t, method, n.URL+path, body, header)
}

// GetRoot is Get of a path below the node's root rather than its API
// prefix (the log's checkpoint and tiles at /log/..., discovery), validated
// the same way.
func (n *Node) GetRoot(t testing.TB, path string) *Response {
	t.Helper()
	return n.do(t, http.MethodGet, n.Root+path, nil, nil)
}

func (n *Node) do(t testing.TB, method, target string, body []byte, header map[string]string) *Response {
	t.Helper()
	path := target
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	for k, v := range header {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v // net/http sends req.Host, never a Host header field
			continue
		}
		req.Header.Set(k, v)
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, path, err)
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Body: b}
	Validate(t, req, r)
	return r
}

// Get is Do with GET and no body.
func (n *Node) Get(t testing.TB, path string) *Response {
	return n.Do(t, http.MethodGet, path, nil, nil)
}

// Validate checks one exchange against the OpenAPI document.
func Validate(t testing.TB, req *http.Request, r *Response) {
	t.Helper()
	// /health's 503 (down, draining) is documented with the Health body;
	// every other error is the envelope.
	// /mcp's protocol errors are JSON-RPC errors, at the statuses revision
	// 2026-07-28 gives them (400, 404): MCP clients read those.
	if r.Status >= 400 && !(r.Status == http.StatusServiceUnavailable && strings.HasSuffix(req.URL.Path, "/api/v1/health")) &&
		!(req.URL.Path == "/mcp" && isJSONRPCError(r.Body)) {
		var env struct {
			Error *struct {
				Code    *string `json:"code"`
				Message *string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil || env.Error == nil || env.Error.Code == nil || env.Error.Message == nil ||
			*env.Error.Code == "" || *env.Error.Message == "" {
			t.Errorf("%s %s: status %d without the error envelope: %s", req.Method, req.URL.Path, r.Status, truncate(r.Body))
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: status %d with Content-Type %q", req.Method, req.URL.Path, r.Status, ct)
		}
	}
	route, params, err := openapiRouter(t).FindRoute(req)
	if err != nil {
		validateUnknownRoute(t, req, r, err)
		return
	}
	validateCachingHeaders(t, req, r, route.Operation.Responses)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
		Body: io.NopCloser(bytes.NewReader(r.Body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: response %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.String(), r.Status,
			firstLines(err.Error(), 12), truncate(r.Body))
	}
	// kin-openapi is lenient where generated clients are not (a null
	// under `nullable: true` skips allOf and enum there): the body is
	// judged again as ajv and the generators read the document.
	if route.Operation.Responses.Status(r.Status) != nil || route.Operation.Responses.Default() != nil {
		if err := strict.ValidateAnswer(req.Method, route.Path, r.Status, r.Body); err != nil {
			t.Errorf("%s %s: response %d is invalid under a strict validator (as generated clients read openapi.yaml): %v\nbody: %s",
				req.Method, req.URL.String(), r.Status, firstLines(err.Error(), 12), truncate(r.Body))
		}
	}
	record(req, route, r)
}

// isJSONRPCError reports whether b is a JSON-RPC 2.0 error response.
func isJSONRPCError(b []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(b, &m) == nil && m.JSONRPC == "2.0" && m.Error != nil && m.Error.Code != nil && m.Error.Message != nil
}

// validateCachingHeaders holds what the validator skips to the document:
// a 304 only where the route lists it, without a body; and the caching
// headers a listed answer declares (ETag, Cache-Control, Vary) present.
func validateCachingHeaders(t testing.TB, req *http.Request, r *Response, responses *openapi3.Responses) {
	t.Helper()
	doc := responses.Status(r.Status)
	if r.Status == http.StatusNotModified {
		if doc == nil {
			t.Errorf("%s %s answered 304, which openapi.yaml does not list for it", req.Method, req.URL.Path)
		}
		if len(r.Body) != 0 {
			t.Errorf("%s %s: 304 with a body of %d bytes", req.Method, req.URL.Path, len(r.Body))
		}
	}
	if doc == nil || doc.Value == nil {
		return
	}
	for _, h := range []string{"ETag", "Cache-Control", "Vary"} {
		if _, declared := doc.Value.Headers[h]; declared && r.Header.Get(h) == "" {
			t.Errorf("%s %s: %d without the %s header openapi.yaml declares", req.Method, req.URL.Path, r.Status, h)
		}
	}
}

// validateUnknownRoute holds an answer to a path or method the document
// does not list to what its conventions say: an error in the envelope
// (checked by Validate), 404 NOT_FOUND for a path that does not exist,
// 405 METHOD_NOT_ALLOWED with Allow for a method the path does not have.
func validateUnknownRoute(t testing.TB, req *http.Request, r *Response, findErr error) {
	t.Helper()
	if r.Status < 400 {
		t.Errorf("%s %s answered %d but is not in openapi.yaml", req.Method, req.URL.Path, r.Status)
		return
	}
	code := r.ErrorCode()
	switch {
	case errors.Is(findErr, routers.ErrMethodNotAllowed):
		if r.Status == 405 && (code != "METHOD_NOT_ALLOWED" || r.Header.Get("Allow") == "") {
			t.Errorf("%s %s: 405 with code %q and Allow %q", req.Method, req.URL.Path, code, r.Header.Get("Allow"))
		}
		if r.Status == 404 && code == "NOT_FOUND" {
			t.Errorf("%s %s: the path exists, yet 404 NOT_FOUND (want 405)", req.Method, req.URL.Path)
		}
	case r.Status == 404 && code != "NOT_FOUND":
		t.Errorf("%s %s: unknown path answered 404 with code %q", req.Method, req.URL.Path, code)
	case r.Status == 405:
		t.Errorf("%s %s: unknown path answered 405 (want 404)", req.Method, req.URL.Path)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", strings.Count(s, "\n")-n))
	}
	return strings.Join(lines, "\n")
}

// nodeHosts holds the host:port of every node StartNode started.
var nodeHosts sync.Map

// Transport returns an http.RoundTripper (over next, or a default one when
// nil) that validates every exchange with a node StartNode started as Do
// does (answers of other servers, test doubles, pass unchecked), for tests whose requests
// go through a client of their own (the Go client, the MCP server): every
// answer a test receives is checked against the document, whoever asks.
// A failed round trip is returned as is.
func Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = httpClient.Transport
	}
	return validating{t: t, next: next}
}

type validating struct {
	t    testing.TB
	next http.RoundTripper
}

func (v validating) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := v.next.RoundTrip(req)
	if err != nil {
		return res, err
	}
	if _, ours := nodeHosts.Load(req.URL.Host); !ours {
		return res, nil // a double of the outside world, not an attestd node
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return res, nil // the caller reads what came and sees the cut
	}
	Validate(v.t, req, &Response{Status: res.StatusCode, Header: res.Header, Body: b})
	return res, nil
}
