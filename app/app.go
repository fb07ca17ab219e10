package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/store"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Prefix is the path prefix of every API route.
const Prefix = "/api/v1"

// Deps are what the API needs. Store and Cache are required.
type Deps struct {
	Store  *store.Store
	Cache  *cache.Cache
	Logger *slog.Logger
	// Registerer receives the HTTP metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Middleware run before every route (rate limiting, ...), in order.
	Middleware []fiber.Handler
	// Health contributors beyond Postgres and the cache's Redis.
	Indexer IndexerStatusFunc
	Chain   ChainStatusFunc
	// Degraded reports extra degradations (the rate limiter's fallback).
	Degraded []func() bool
	// AccessLogAll logs every request, not only 5xx and slow ones.
	AccessLogAll bool
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// API is the HTTP application.
type API struct {
	deps    Deps
	log     *slog.Logger
	started time.Time
	m       *httpMetrics
	fiber   *fiber.App
}

// New builds the Fiber application with every route.
func New(d Deps) *API {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	a := &API{deps: d, log: d.Logger, started: time.Now(), m: newHTTPMetrics(d.Registerer)}
	a.fiber = fiber.New(fiber.Config{
		AppName:               "attestd " + buildinfo.Version,
		DisableStartupMessage: true,
		ErrorHandler:          a.handleError,
		ReadTimeout:           15 * time.Second,
		WriteTimeout:          15 * time.Second,
		IdleTimeout:           90 * time.Second,
		BodyLimit:             1 << 20,
		ReadBufferSize:        16 << 10,
		// Large enough that a list page (~11 KB) leaves in one write with its
		// headers rather than a header flush and a body write.
		WriteBufferSize: 32 << 10,
	})
	a.fiber.Use(a.requestID, a.recover, a.observe)
	for _, mw := range d.Middleware {
		a.fiber.Use(mw)
	}
	a.routes()
	return a
}

// Fiber returns the underlying application (to listen or to test).
func (a *API) Fiber() *fiber.App { return a.fiber }

// Listen serves on addr until ctx ends, then shuts down within grace.
func (a *API) Listen(ctx context.Context, addr string, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- a.fiber.Listen(addr) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "grace", grace.String())
	if err := a.fiber.ShutdownWithTimeout(grace); err != nil {
		return err
	}
	return <-errc
}

func (a *API) routes() {
	r := a.fiber.Group(Prefix)
	r.Get("/health", a.health)
	r.Get("/stats", a.stats)
	r.Get("/attestations", a.listAttestations)
	r.Get("/attestations/:id", a.getAttestation)
	r.Get("/agents/:agentId", a.getAgent)
	r.Get("/agents/:agentId/stats", a.getAgentStats)
	r.Get("/openapi.json", a.openAPI)
	// Unknown paths and methods fall through to Fiber's 404/405 errors,
	// which handleError writes in the envelope.
}

// Route adds a route under the API prefix (for packages that add features).
func (a *API) Route(method, path string, handlers ...fiber.Handler) {
	a.fiber.Add(method, Prefix+path, handlers...)
}

// handleError turns every error into the envelope. Internal errors are
// logged with the request id and answered without detail.
func (a *API) handleError(c *fiber.Ctx, err error) error {
	if e, ok := apierror.As(err); ok {
		return apierror.Write(c, e.Status, e.Code, e.Message)
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return apierror.Write(c, fe.Code, apierror.CodeNotFound, "no route "+c.Method()+" "+c.Path())
		case http.StatusMethodNotAllowed:
			return apierror.Write(c, fe.Code, apierror.CodeMethodNotAllowed, "method "+c.Method()+" is not allowed on "+c.Path())
		case http.StatusRequestEntityTooLarge:
			return apierror.Write(c, fe.Code, apierror.CodePayloadTooLarge, "request body too large")
		case http.StatusRequestTimeout:
			return apierror.Write(c, fe.Code, "REQUEST_TIMEOUT", "request timed out")
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return apierror.Write(c, fe.Code, apierror.CodeInvalidParam, fe.Message)
		}
	}
	a.log.Error("request failed", "request_id", requestIDOf(c), "method", c.Method(), "path", c.Path(), "err", err)
	return apierror.Write(c, http.StatusInternalServerError, apierror.CodeInternal, "internal error; quote request id "+requestIDOf(c))
}
