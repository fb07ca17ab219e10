package app

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/openapi"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Deps are what the API needs. Store and Cache are required.
type Deps struct {
	Store  *store.Store
	Cache  *cache.Cache
	Logger *slog.Logger
	// Registerer receives the HTTP metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Trace (nil: none) runs first on every request: it makes the
	// request's server span (tracing.Middleware).
	Trace fiber.Handler
	// Middleware run before every route (rate limiting, ...), in order,
	// except the static ones (API.Static: the web application's page and
	// files, which are not API calls).
	Middleware []fiber.Handler
	// Unlimited are routes outside the API prefix that Middleware does not
	// see (the transparency log's tiles, served at the log's origin and
	// guarded by their own limit): only the front (request ids, metrics,
	// the panic guard, framing checks) runs before them.
	Unlimited []httpapi.Route
	// Health contributors beyond Postgres and the cache's Redis.
	Indexer IndexerStatusFunc
	Chain   ChainStatusFunc
	// Log reports the transparency log's state and its witnesses (nil:
	// /health says nothing of a log).
	Log LogHealthFunc
	// LogStatus reads the transparency log's newest checkpoint for the
	// overview (nil: the overview's log is null).
	LogStatus LogStatusFunc
	// Stream serves GET /attestations/stream, the live stream (package
	// stream; nil: the route answers 404).
	Stream fiber.Handler
	// Degradations are features with a fallback mode (the rate limiter's
	// local decisions): /health is degraded, with the reason, while one is
	// active.
	Degradations []Degradation
	// AccessLogAll logs every request, not only 5xx and slow ones.
	AccessLogAll bool
	// ConnLimit caps the connections per client IP (zero: no cap).
	ConnLimit ConnLimit
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// HTTPCache is how long caches may reuse public answers (zero: the
	// defaults).
	HTTPCache httpcache.Config
	// Timeouts bound each connection's reads, writes and idle waits (zero
	// fields: the defaults).
	Timeouts Timeouts
	// OpenAPIPatch, when set, rewrites the served OpenAPI document (JSON)
	// once at start: x402 sets each payable operation's live price.
	OpenAPIPatch func([]byte) ([]byte, error)
}

// API is the HTTP application.
type API struct {
	deps    Deps
	log     *slog.Logger
	started time.Time
	m       *httpMetrics
	fiber   *fiber.App
	control struct{ index, confirmed, finalized []byte } // Cache-Control of public answers (Deps.HTTPCache)
	doc     cache.Value                                  // the OpenAPI document, with its tags
	docErr  error
	// draining: the node is stopping (see ListenWith); /health says so
	// and every answer closes its connection.
	draining   atomic.Bool
	drainStart atomic.Int64 // unix nanoseconds the drain began
	// statics are the patterns of the static routes (Static), set while
	// the node is wired, before it serves.
	statics []string
}

// New builds the Fiber application with every route.
func New(d Deps) *API {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	d.Timeouts = d.Timeouts.withDefaults()
	a := &API{deps: d, log: d.Logger, started: time.Now(), m: newHTTPMetrics(d.Registerer)}
	metric.Register(d.Registerer, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attestd_http_draining_seconds",
		Help: "Seconds this node has been draining (0: not draining); a drain that outlasts its timeout is stuck."}, a.drainingSeconds))
	cc := d.HTTPCache.Headers()
	a.control.index, a.control.confirmed, a.control.finalized = []byte(cc.Index), []byte(cc.Confirmed), []byte(cc.Finalized)
	b, err := openapi.JSON()
	if err == nil && d.OpenAPIPatch != nil {
		b, err = d.OpenAPIPatch(b)
	}
	if err != nil {
		a.docErr = err
	} else {
		a.doc = cache.MakeValue(append(b[:len(b):len(b)], '\n'), true) // a JSON answer ends with a newline
	}
	a.fiber = fiber.New(fiber.Config{
		// Requests of other methods are answered by this app too (see
		// below), so that limits, request ids and the envelope apply.
		RequestMethods: append(fiber.DefaultMethods[:len(fiber.DefaultMethods):len(fiber.DefaultMethods)], unknownMethod),
		AppName:        "attestd " + buildinfo.Version,
		// c.JSON, everywhere on this app (errors included), ends its
		// answer with a newline, as every JSON answer does (httpapi.Marshal).
		JSONEncoder:           httpapi.Marshal,
		DisableStartupMessage: true,
		ErrorHandler:          a.handleError,
		ReadTimeout:           d.Timeouts.Read,
		WriteTimeout:          d.Timeouts.Write,
		IdleTimeout:           d.Timeouts.Idle,
		BodyLimit:             1 << 20,
		ReadBufferSize:        16 << 10,
		// Large enough that a list page (~11 KB) leaves in one write with its
		// headers rather than a header flush and a body write.
		WriteBufferSize: 32 << 10,
	})
	// Fiber answers a method outside RequestMethods itself, with a plain
	// 400 before any middleware: no envelope, no request id, no limit.
	// Such requests reach the app as unknownMethod; methodOf names the
	// method they were sent with.
	srv := a.fiber.Server()
	srv.HeaderReceived = headerReceived // framing decided before any body is read
	next := srv.Handler
	srv.Handler = func(rctx *fasthttp.RequestCtx) {
		if m := rctx.Method(); !standardMethod(m) {
			rctx.SetUserValue(sentMethodKey{}, excerpt.Of(string(m), httpapi.MaxEcho))
			rctx.Request.Header.SetMethod(unknownMethod)
		}
		next(rctx)
		if a.draining.Load() {
			// A proxy's keep-alive connection to a draining node ends
			// with this answer: its next request opens a connection,
			// to whichever node is up by then.
			rctx.SetConnectionClose()
		}
	}
	a.install(d)
	a.routes()
	return a
}

// install puts the middleware in front of the routes, in the order a
// request meets it.
func (a *API) install(d Deps) {
	// A request the node makes of itself (the remote MCP endpoint's tools,
	// package inprocess) runs under the context it was made with: its
	// deadline, and the tool call's span as its parent.
	a.fiber.Use(inheritContext)
	if d.Trace != nil {
		a.fiber.Use(d.Trace)
	}
	a.fiber.Use(a.front)
	for _, r := range d.Unlimited {
		a.fiber.Add(r.Method, r.Path, r.Handlers...)
	}
	for _, mw := range d.Middleware {
		a.fiber.Use(func(c *fiber.Ctx) error {
			if a.isStatic(c.Path()) {
				return c.Next()
			}
			return mw(c)
		})
	}
}

// inheritContext gives an in-process request (inprocess.Is) the context
// it was made under as its user context.
func inheritContext(c *fiber.Ctx) error {
	if ctx := inprocess.Context(c.Context()); ctx != nil {
		c.SetUserContext(ctx)
	}
	return c.Next()
}

// InProcess is the handler the node's listener runs, for requests the
// node makes of itself (package inprocess): the same routes, middleware
// and error envelope as a request read off a connection.
func (a *API) InProcess() fasthttp.RequestHandler { return a.fiber.Server().Handler }

// Fiber returns the underlying application (to listen or to test).
func (a *API) Fiber() *fiber.App { return a.fiber }

// Listen serves on addr until ctx ends, then shuts down within grace
// (without a drain: see ListenWith).
func (a *API) Listen(ctx context.Context, addr string, grace time.Duration) error {
	return a.ListenWith(ctx, addr, ListenOptions{Grace: grace})
}

// Serve answers on ln (with the per-IP connection cap, a lingering close
// so early answers reach clients still sending, and deadlines applied
// only when they move) until shut down.
func (a *API) Serve(ln net.Listener) error {
	ln = newLimitListener(lingerListener{ln}, a.deps.ConnLimit, a.m.refusedConns)
	return a.fiber.Listener(deadlineListener{Listener: ln, slack: a.deps.Timeouts.slack()})
}

func (a *API) routes() {
	r := a.fiber.Group(httpapi.Prefix)
	r.Get("/health", a.health)
	r.Get("/stats", a.stats)
	r.Get("/stats/activity", a.globalActivity)
	r.Get("/stats/overview", a.overview)
	r.Get("/agents", a.listAgents)
	r.Get("/agents/:agentId/activity", a.agentActivity)
	r.Get("/samples", a.listSamples)
	r.Get("/attestations", a.listAttestations)
	r.Get("/attestations/stream", a.serveStream) // before /attestations/:id, which "stream" would match
	r.Get("/attestations/:id", a.getAttestation)
	r.Get("/agents/:agentId", a.getAgent)
	r.Get("/agents/:agentId/stats", a.getAgentStats)
	r.Get("/openapi.json", a.openAPI)
	// Unknown paths and methods fall through to Fiber's 404/405 errors,
	// which handleError writes in the envelope.
}

// serveStream answers GET /attestations/stream with Deps.Stream (404
// without one).
func (a *API) serveStream(c *fiber.Ctx) error {
	if a.deps.Stream != nil {
		return a.deps.Stream(c)
	}
	return apierror.NotFound(apierror.CodeNotFound, "no route %s %s", methodOf(c), excerpt.Of(c.Path(), httpapi.MaxEcho))
}

// Route adds a route under the API prefix (for packages that add features).
func (a *API) Route(method, path string, handlers ...fiber.Handler) {
	a.fiber.Add(method, httpapi.Prefix+path, handlers...)
}

// Page adds a route outside the API prefix (discovery documents at the
// origin's root): the same middleware (request ids, limits, metrics)
// applies.
func (a *API) Page(method, path string, handlers ...fiber.Handler) {
	a.fiber.Add(method, path, handlers...)
}

// Static adds a route outside the API prefix that is not an API call: the
// web application's page and its files, which a browser loads with every
// visit. Request ids, metrics and the per-IP connection cap apply; the
// per-IP request limit and the rest of Deps.Middleware do not, so a
// visitor who spent the API's limit still gets the page (and the page
// says why its data is missing). Paths under /api/ cannot be static: the
// limit on the API stays exact. Call it before the node serves.
func (a *API) Static(method, path string, handlers ...fiber.Handler) {
	if strings.HasPrefix(path, "/api/") {
		panic("app: a static route under /api/: " + path)
	}
	if !slices.Contains(a.statics, path) {
		a.statics = append(a.statics, path)
	}
	a.fiber.Add(method, path, handlers...)
}

// isStatic reports whether path is a static route's (as the router
// matches it). A path under /api/ never is, at the cost of one comparison.
func (a *API) isStatic(path string) bool {
	if strings.HasPrefix(path, "/api/") {
		return false
	}
	for _, p := range a.statics {
		if routeMatches(p, path) {
			return true
		}
	}
	return false
}

// handleError turns every error into the envelope. Internal errors are
// logged with the request id and answered without detail. It also answers
// what fasthttp refuses before any handler runs (malformed requests,
// oversized headers or bodies), so those get a request id here.
func (a *API) handleError(c *fiber.Ctx, err error) error {
	if requestIDOf(c) == "" {
		a.setRequestID(c, newRequestID())
	}
	uncacheable(c)
	if e, ok := apierror.As(err); ok {
		return apierror.Write(c, e.Status, e.Code, e.Message)
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return apierror.Write(c, fe.Code, apierror.CodeNotFound, "no route "+methodOf(c)+" "+excerpt.Of(c.Path(), httpapi.MaxEcho))
		case http.StatusMethodNotAllowed:
			allow := a.allowedMethods(c.Path())
			c.Set(fiber.HeaderAllow, allow)
			return apierror.Write(c, fe.Code, apierror.CodeMethodNotAllowed,
				"method "+methodOf(c)+" is not allowed on "+excerpt.Of(c.Path(), httpapi.MaxEcho)+"; allowed: "+allow)
		case http.StatusRequestEntityTooLarge:
			return apierror.Write(c, fe.Code, apierror.CodePayloadTooLarge, "request body too large (at most "+strconv.Itoa(a.fiber.Config().BodyLimit>>10)+" KiB)")
		case http.StatusRequestHeaderFieldsTooLarge:
			return apierror.Write(c, fe.Code, apierror.CodeHeadersTooLarge, "request headers too large (at most "+strconv.Itoa(a.fiber.Config().ReadBufferSize>>10)+" KiB in all)")
		case http.StatusRequestTimeout:
			return apierror.Write(c, fe.Code, apierror.CodeRequestTimeout, "request timed out")
		}
		if fe.Code >= 400 && fe.Code < 500 {
			// Fiber's own 4xx errors carry fasthttp's wording (parse errors
			// of the request line, headers, Content-Length): not ours to echo.
			return apierror.Write(c, http.StatusBadRequest, apierror.CodeInvalidParam, "malformed HTTP request")
		}
		if fe.Code == http.StatusBadGateway { // the client's connection failed while sending
			return apierror.Write(c, http.StatusBadRequest, apierror.CodeInvalidParam, "the request could not be read")
		}
	}
	a.log.Error("request failed", "request_id", requestIDOf(c), "method", methodOf(c), "path", c.Path(), "err", err)
	return apierror.Write(c, http.StatusInternalServerError, apierror.CodeInternal, "internal error; quote request id "+requestIDOf(c))
}

// uncacheable makes an error answer one no cache keeps: Cache-Control
// no-store, and none of the validators or surrogate keys a handler may
// have set before it failed. Errors are never cached, not even the ones
// RFC 9111 would let a cache reuse heuristically (404, 405, 414, 501): a
// 404 for an attestation id turns into its answer as soon as that
// attestation is indexed, and its agent, who can compute the id before,
// polls for exactly that.
func uncacheable(c *fiber.Ctx) {
	h := &c.Response().Header
	h.Set(fiber.HeaderCacheControl, httpcache.NoStore)
	h.Del(fiber.HeaderETag)
	h.Del(httpcache.HeaderSurrogateKey)
	h.Del(httpcache.HeaderCacheTag)
}

// unknownMethod stands for every method outside the standard ones (see
// New); no route uses it, so such requests get 405 or 404.
const unknownMethod = "X-UNKNOWN-METHOD"

type sentMethodKey struct{}

func standardMethod(m []byte) bool {
	for _, s := range fiber.DefaultMethods {
		if string(m) == s {
			return true
		}
	}
	return false
}

// methodOf is the method the client sent (c.Method() says unknownMethod
// for the methods New maps to it). The result is safe to keep.
func methodOf(c *fiber.Ctx) string {
	if m, ok := c.Context().UserValue(sentMethodKey{}).(string); ok {
		return m
	}
	return methodLabel(c.Method())
}

// allowedMethods lists the methods of the routes matching path, for the
// Allow header of a 405 (rare: computed when needed).
func (a *API) allowedMethods(path string) string {
	var out []string
	for _, r := range a.fiber.GetRoutes(true) {
		if r.Method == unknownMethod || slices.Contains(out, r.Method) || !routeMatches(r.Path, path) {
			continue
		}
		out = append(out, r.Method)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// routeMatches matches a request path against a route pattern whose
// ":name" segments match any one segment and whose final "*" matches the
// rest (case-insensitive, trailing slash ignored, as the router matches).
func routeMatches(pattern, path string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	qs := strings.Split(strings.Trim(path, "/"), "/")
	if n := len(ps); n > 0 && ps[n-1] == "*" && len(qs) >= n-1 {
		ps, qs = ps[:n-1], qs[:n-1]
	}
	if len(ps) != len(qs) {
		return false
	}
	for i := range ps {
		if strings.HasPrefix(ps[i], ":") {
			if qs[i] == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(ps[i], qs[i]) {
			return false
		}
	}
	return true
}
