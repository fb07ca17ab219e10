package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// Security headers of every page and asset.
const (
	ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	ReferrerPolicy = "strict-origin-when-cross-origin"
)

// Deps are what the web application works with: its Config and its
// connections.
type Deps struct {
	Store  *store.Store          // required: accounts of wallets
	Redis  redis.UniversalClient // required: nonces and sessions
	Prefix string                // Redis key prefix, such as "attestd:web:"
	Config                       // the tunables, from settings
	// Resolver finds a request's client IP (for the bound on new
	// accounts): the rate limiter's, so trusted proxies are believed
	// alike. Nil: the socket peer.
	Resolver *ratelimit.IPResolver
	Logger   *slog.Logger
	Now      func() time.Time
}

// Web serves the pages, the assets and the sign-in routes, and
// authenticates sessions for the account routes (apikey.Sessions).
type Web struct {
	opt    Deps
	assets *assets
	log    *slog.Logger
}

// New loads the embedded assets and checks the options.
func New(opt Deps) (*Web, error) {
	if opt.Store == nil || opt.Redis == nil {
		return nil, errors.New("web: Store and Redis are required")
	}
	if opt.Config.SessionTTL <= 0 {
		opt.Config.SessionTTL = 12 * time.Hour
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Resolver == nil {
		r, err := ratelimit.NewIPResolver(nil, "")
		if err != nil {
			return nil, err
		}
		opt.Resolver = r
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	return &Web{opt: opt, assets: a, log: opt.Logger}, nil
}

// Routes adds the page (/) and its files (/assets/*), static routes
// outside the API's per-IP limit (httpapi.Router.Static), and the sign-in routes
// (/api/v1/auth/...). Without an origin (Config.Origin) they all answer
// 503 naming ATTESTD_PUBLIC_URL.
func (w *Web) Routes(r httpapi.Router) {
	on := w.requireOrigin
	r.Static(http.MethodGet, "/", w.securityHeaders, on, w.index)
	r.Static(http.MethodHead, "/", w.securityHeaders, on, w.index)
	r.Static(http.MethodGet, "/assets/:name", w.securityHeaders, on, w.asset)
	r.Static(http.MethodHead, "/assets/:name", w.securityHeaders, on, w.asset)
	r.Route(http.MethodGet, "/auth/nonce", on, w.nonce)
	r.Route(http.MethodPost, "/auth/signin", on, w.signIn)
	r.Route(http.MethodGet, "/auth/session", on, w.session)
	r.Route(http.MethodPost, "/auth/signout", on, w.signOut)
	r.Route(http.MethodGet, "/auth/payments", on, w.payments)
}

// Off reports whether the console is off: no public origin configured.
func (w *Web) Off() bool { return w.opt.Config.Origin.IsZero() }

// requireOrigin answers 503 while the node has no public origin: without
// one, no sign-in could name this site.
func (w *Web) requireOrigin(c *fiber.Ctx) error {
	if w.Off() {
		httpcache.Private(c)
		return apierror.Unavailable("the web console is off on this node: set ATTESTD_PUBLIC_URL to the origin browsers use (such as https://attestd.example.com)")
	}
	return c.Next()
}

// securityHeaders sets what every page and asset says to the browser,
// errors included.
func (w *Web) securityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(c)
	return c.Next()
}

func setSecurityHeaders(c *fiber.Ctx) {
	h := &c.Response().Header
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", ReferrerPolicy)
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

func (w *Web) index(c *fiber.Ctx) error {
	if len(c.Request().URI().QueryString()) > 2048 {
		return apierror.Invalid("the query string must be at most 2048 bytes")
	}
	return w.assets.index.send(c)
}

func (w *Web) asset(c *fiber.Ctx) error {
	name := c.Params("name")
	a, ok := w.assets.lookup(name)
	if !ok {
		return apierror.NotFound(apierror.CodeNotFound, "no asset %q", excerpt.Of(name, 64))
	}
	return a.send(c)
}

// randomToken is n random bytes in unpadded base64url.
func randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hashed names a secret in Redis without storing it.
func hashed(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

func (w *Web) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), 2*time.Second)
}
