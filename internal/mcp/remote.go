package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Path is where an API node serves the remote MCP endpoint.
const Path = "/mcp"

// Bounds of the remote endpoint.
const (
	// MaxRemoteBody bounds one request: a bulk_verify of 1000 ids with a
	// payment in _meta is under 100 KB.
	MaxRemoteBody = 256 << 10
	// MaxDepth bounds the nesting of a request's JSON (objects and arrays):
	// the deepest legitimate request, a payment in _meta, nests 6 deep.
	MaxDepth = 32
	// MaxAPIKey bounds an API key presented on a request (keys are 48
	// characters).
	MaxAPIKey = 256
	// FreeToolTimeout and PaidToolTimeout bound one tool call: a paid call
	// waits for its payment's settlement.
	FreeToolTimeout = 10 * time.Second
	PaidToolTimeout = 40 * time.Second
	// ToolListTTL is how long a client may keep the tool list (and the
	// server/discover answer) of protocol 2026-07-28: tools change only
	// with a release, and a rolling release takes minutes.
	ToolListTTL = 10 * time.Minute
)

// Caller is who a remote tool call is made for: its address as the node's
// rate limiter resolves it, and the API key it presented ("" for none).
type Caller struct {
	Addr   netip.Addr
	APIKey string
}

type callerKey struct{}

// WithCaller returns a context for calls made for c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries.
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// RemoteConfig configures the MCP endpoint of an API node.
type RemoteConfig struct {
	// Origin is the node's public origin (ATTESTD_PUBLIC_URL, or its
	// loopback address): a request's Host, and its Origin when it has
	// one, must be this origin's (DNS rebinding).
	Origin config.Origin
	// API answers the tools' reads in process: the node's own handler
	// (an inprocess.Transport), never a socket.
	API http.RoundTripper
	// ClientIP resolves a request's client address as the rate limiter
	// does (the trusted proxies' forwarded addresses).
	ClientIP func(*fiber.Ctx) netip.Addr
	Logger   *slog.Logger
	// Registerer receives the endpoint's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Remote is the MCP endpoint of an API node: the tools answered from the
// node's own API in process, for each caller as that caller (its address,
// its API key, its payments).
type Remote struct {
	s *Server
	h http.Handler
	// origins and hosts are the Origin and Host values accepted: the
	// public origin's, and for a loopback origin (make run) the same
	// port under each loopback name.
	origins, hosts []string
	clientIP       func(*fiber.Ctx) netip.Addr
	log            *slog.Logger
}

// NewRemote builds the endpoint.
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	if cfg.Origin.IsZero() {
		return nil, fmt.Errorf("mcp: the remote endpoint needs the node's public origin (ATTESTD_PUBLIC_URL)")
	}
	if cfg.API == nil || cfg.ClientIP == nil {
		return nil, fmt.Errorf("mcp: the remote endpoint needs the node's API and client address resolver")
	}
	s, err := New(Config{APIURL: cfg.Origin.String(), Timeout: PaidToolTimeout, Logger: cfg.Logger,
		HTTPClient: &http.Client{Transport: callerTransport{next: cfg.API}}, remote: true})
	if err != nil {
		return nil, err
	}
	s.askPrice.Store(true)
	// Counted outermost: every method, and every tool call's outcome as
	// the caller gets it (payment errors included).
	s.mcp.AddReceivingMiddleware(newMetrics(cfg.Registerer).middleware)
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.mcp },
		&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log,
			// Host and Origin are checked against the public origin before
			// the SDK sees the request (see Handler).
			DisableLocalhostProtection: true, MaxRequestBodyBytes: MaxRemoteBody})
	r := &Remote{s: s, h: h, clientIP: cfg.ClientIP, log: s.log}
	r.origins, r.hosts = accepted(cfg.Origin)
	return r, nil
}

// accepted are the Origin values and Host names of requests for origin
// o: its own (first); for a loopback origin also the other loopback
// names (localhost, 127.0.0.1, [::1]) of its port, which no other site
// can be. Host is compared by name: a proxy may leave the port out.
func accepted(o config.Origin) (origins, hosts []string) {
	_, port, err := net.SplitHostPort(o.Host)
	if err != nil {
		port = ""
	}
	name := hostName(o.Host)
	origins, hosts = []string{o.String()}, []string{name}
	if isLoopbackName(name) {
		for _, alt := range []string{"localhost", "127.0.0.1", "[::1]"} {
			if alt == name {
				continue
			}
			hosts = append(hosts, alt)
			h := alt
			if port != "" {
				h = net.JoinHostPort(strings.Trim(alt, "[]"), port)
			}
			origins = append(origins, o.Scheme+"://"+h)
		}
	}
	return origins, hosts
}

func isLoopbackName(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.IsLoopback()
}

// Server is the tool server behind the endpoint.
func (r *Remote) Server() *Server { return r.s }

// callerTransport sends a tool's API request as the caller: from its
// address, with its API key (and never with any other).
type callerTransport struct{ next http.RoundTripper }

func (t callerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, ok := CallerOf(req.Context())
	if !ok {
		return nil, fmt.Errorf("mcp: a tool call without its caller")
	}
	req = req.Clone(inprocess.WithPeer(req.Context(), c.Addr))
	req.Header.Del(client.APIKeyHeader)
	if c.APIKey != "" {
		req.Header.Set(client.APIKeyHeader, c.APIKey)
	}
	return t.next.RoundTrip(req)
}

// Handler serves POST /mcp. The node's middleware ran before it: the
// request counts as one of the caller's API requests, whatever tool it
// calls (docs/mcp.md says why).
func (r *Remote) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		body, err := r.check(c)
		if err != nil {
			return err
		}
		key, err := apiKey(c)
		if err != nil {
			return err
		}
		caller := Caller{Addr: r.clientIP(c), APIKey: key}
		ctx, cancel := context.WithTimeout(WithCaller(c.UserContext(), caller), PaidToolTimeout+5*time.Second)
		defer cancel()
		req, err := httpRequest(ctx, c, body)
		if err != nil {
			return err
		}
		w := newRecorder()
		r.h.ServeHTTP(w, req)
		return r.answer(c, w)
	}
}

// check refuses what the endpoint does not serve, before the SDK decodes
// anything: another Host or Origin than the public origin's, and a body
// that is not exactly one JSON-RPC message the SDK reads as sent (see
// message). It returns the body, decoded from its Content-Encoding
// within MaxRemoteBody. (Only POST is routed here: the app answers other
// methods 405, with Allow: POST.)
func (r *Remote) check(c *fiber.Ctx) ([]byte, error) {
	if host := string(c.Request().Host()); !containsFold(r.hosts, hostName(host)) {
		return nil, apierror.Forbidden("this MCP endpoint answers requests for %s only, not for host %q (DNS rebinding protection)",
			r.hosts[0], excerpt.Of(host, httpapi.MaxEcho))
	}
	if o := c.Request().Header.Peek(fiber.HeaderOrigin); len(o) > 0 && !containsFold(r.origins, string(o)) {
		return nil, apierror.Forbidden("requests from origin %q are refused: this MCP endpoint accepts its own origin %s, or requests without an Origin header",
			excerpt.Of(string(o), httpapi.MaxEcho), r.origins[0])
	}
	body, err := httpapi.Body(c, MaxRemoteBody)
	if err != nil {
		return nil, err
	}
	if first := firstByte(body); first == '[' {
		return nil, apierror.Invalid("JSON-RPC batches are not accepted: send one message per request (batching left MCP in revision 2025-06-18)")
	}
	if depth(body) > MaxDepth {
		return nil, apierror.Invalid("the request's JSON nests deeper than %d levels", MaxDepth)
	}
	return body, message(body)
}

// maxMethod bounds a method name (the longest MCP method is under 40).
const maxMethod = 128

// message refuses a body that is not exactly one JSON object whose keys
// appear once each (the SDK, like encoding/json, would read the last of
// two, where another reader takes the first), with an id the SDK keeps
// as sent (a string, or an integer within ±2^53: it reads numbers
// through float64) and a method of a sane length.
func message(body []byte) error {
	if err := jsonbody.Check(body); err != nil {
		return jsonbody.Refusal(err, "the body is not one JSON-RPC message (one JSON object, nothing after it)")
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return apierror.Invalid("the body is not a JSON-RPC message: a JSON object with jsonrpc, method and (for a request) id")
	}
	if len(m.Method) > maxMethod+2 {
		return apierror.Invalid("the method name is longer than %d characters", maxMethod)
	}
	if id := string(m.ID); id != "" && id != "null" && id[0] != '"' {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return apierror.Invalid("the id must be a string or an integer within ±2^53, as JSON-RPC clients send; got %s", excerpt.Of(id, 40))
		}
	}
	return nil
}

// hostName is a Host header's name, without its port (an IPv6 address
// in brackets, as origins write it).
func hostName(h string) string {
	name, _, err := net.SplitHostPort(h)
	switch {
	case err != nil:
		return h
	case strings.Contains(name, ":"):
		return "[" + name + "]"
	}
	return name
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(v string) bool { return strings.EqualFold(v, s) })
}

// apiKey is the API key the caller presented: Authorization: Bearer or
// X-API-Key, any number of times but one key (a second would be read by
// one reader and not another).
func apiKey(c *fiber.Ctx) (string, error) {
	h := &c.Request().Header
	keys := map[string]bool{}
	for _, v := range h.PeekAll(client.APIKeyHeader) {
		if k := strings.TrimSpace(string(v)); k != "" {
			keys[k] = true
		}
	}
	for _, a := range h.PeekAll(fiber.HeaderAuthorization) {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(string(a)), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return "", apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized,
				"the Authorization header must be \"Bearer <API key>\"; or send the key as X-API-Key")
		}
		keys[strings.TrimSpace(tok)] = true
	}
	var key string
	for k := range keys {
		if len(k) > MaxAPIKey {
			return "", apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized, "the API key is longer than %d characters: not an attestd key", MaxAPIKey)
		}
		key = k
	}
	if len(keys) > 1 {
		return "", apierror.Invalid("the X-API-Key and Authorization: Bearer headers name different keys: send one")
	}
	return key, nil
}

// httpRequest copies the Fiber request (which fasthttp reuses once the
// handler returns) into a net/http one for the SDK.
func httpRequest(ctx context.Context, c *fiber.Ctx, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("mcp: request: %w", err)
	}
	req.Host = string(c.Request().Host())
	req.RemoteAddr = c.Context().RemoteAddr().String()
	c.Request().Header.VisitAll(func(k, v []byte) {
		for _, drop := range []string{
			fiber.HeaderAuthorization, client.APIKeyHeader, fiber.HeaderCookie, // the caller's credentials go no further than Caller
			fiber.HeaderContentEncoding, fiber.HeaderContentLength, // the body is decoded
		} {
			if strings.EqualFold(string(k), drop) {
				return
			}
		}
		req.Header.Add(string(k), string(v))
	})
	return req, nil
}

// answer writes the SDK's answer. The SDK's own refusals in plain text
// (a wrong Accept or Content-Type, a body it cannot read) become the
// API's error envelope; JSON-RPC answers, errors included, pass as they
// are.
func (r *Remote) answer(c *fiber.Ctx, w *recorder) error {
	ct := w.header.Get(fiber.HeaderContentType)
	if w.code >= 400 && !strings.HasPrefix(ct, fiber.MIMEApplicationJSON) {
		msg := excerpt.Of(strings.TrimSpace(w.body.String()), 300)
		switch {
		case w.code >= 500:
			r.log.Error("mcp endpoint failed", "status", w.code, "err", msg)
			return fmt.Errorf("mcp: the SDK answered %d: %s", w.code, excerpt.Of(msg, 200))
		case w.code == http.StatusRequestEntityTooLarge:
			return apierror.New(w.code, apierror.CodePayloadTooLarge, "%s", msg)
		case w.code == http.StatusUnsupportedMediaType:
			return apierror.New(w.code, apierror.CodeUnsupportedMedia, "%s", msg)
		case w.code == http.StatusMethodNotAllowed:
			return apierror.New(w.code, apierror.CodeMethodNotAllowed, "%s", msg)
		case w.code == http.StatusForbidden:
			return apierror.Forbidden("%s", msg)
		case w.code == http.StatusNotFound:
			return apierror.NotFound(apierror.CodeNotFound, "%s", msg)
		}
		return apierror.New(w.code, apierror.CodeInvalidParam, "%s", msg)
	}
	for k, vs := range w.header {
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
	// An MCP answer is for this caller only (its payments, its limit).
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Status(w.code)
	return c.Send(w.body.Bytes())
}

// recorder is the http.ResponseWriter the SDK answers into: its answers
// are whole JSON documents (JSONResponse), written once.
type recorder struct {
	code   int
	header http.Header
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{code: http.StatusOK, header: make(http.Header)} }

func (w *recorder) Header() http.Header         { return w.header }
func (w *recorder) WriteHeader(code int)        { w.code = code }
func (w *recorder) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *recorder) Flush()                      {}

// firstByte is b's first byte that is not JSON white space (0: none).
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// depth is the deepest nesting of objects and arrays in the JSON text b
// (brackets inside strings do not count), read without decoding.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// toolTimeout bounds one call of the named tool on the remote endpoint.
func toolTimeout(name string) time.Duration {
	if slices.Contains(PremiumTools, name) {
		return PaidToolTimeout
	}
	return FreeToolTimeout
}

// toolsOnly answers the methods of features the server does not offer
// (prompts, resources, completions: the SDK would answer empty lists or
// "not found"; subscriptions, whose stream a stateless JSON endpoint
// does not keep) with JSON-RPC's method not found, as server/discover
// declares tools alone; on a node it bounds each tool call by
// toolTimeout.
func (s *Server) toolsOnly(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if strings.HasPrefix(method, "prompts/") || strings.HasPrefix(method, "resources/") || strings.HasPrefix(method, "completion/") ||
			strings.HasPrefix(method, "subscriptions/") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: fmt.Sprintf("method %q is not offered: this server has tools only", excerpt.Of(method, httpapi.MaxEcho))}
		}
		if call, ok := req.(*mcpsdk.CallToolRequest); ok && s.remote && method == "tools/call" && call.Params != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, toolTimeout(call.Params.Name))
			defer cancel()
		}
		return next(ctx, method, req)
	}
}
