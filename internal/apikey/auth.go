package apikey

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
)

// Principal is who a request authenticated as.
type Principal struct {
	AccountID   int64
	AccountName string
	KeyID       int64
	KeyPrefix   string
	Role        Role
}

type principalKey struct{}

// PrincipalFrom returns the principal that Require stored for the request;
// ok is false when the request was not authenticated by key (for example
// when OnMissingKey let it through).
func PrincipalFrom(c *fiber.Ctx) (Principal, bool) {
	p, ok := c.Locals(principalKey{}).(Principal)
	return p, ok
}

// RequireOptions adjust one use of the key middleware.
type RequireOptions struct {
	// OnMissingKey handles requests that carry no x-api-key header at all
	// (nil: 401 UNAUTHORIZED). It is the seam for pay-per-request access
	// (x402): the handler can answer 402 with payment instructions, or
	// verify a payment and call c.Next() to run the route. A key that is
	// present but malformed, unknown or revoked is always 401.
	OnMissingKey fiber.Handler
	// AllowSession admits a signed-in session of the web application
	// (Deps.Sessions) in place of a key, as an admin of its account: for
	// the routes that manage the account (webhooks). Premium routes leave it
	// off, so they stay behind a key or a payment.
	AllowSession bool
}

// Sessions authenticates a request by something other than a key: the
// web application's signed-in session cookie.
type Sessions interface {
	// Principal reports the request's session principal. ok is false when
	// the request carries no session at all; err is the answer to send
	// when it carries one that does not admit it (401 for an unknown or
	// expired session, 403 for a state-changing call without the session's
	// CSRF token, 503 when it cannot be checked).
	Principal(c *fiber.Ctx) (p Principal, ok bool, err error)
}

// SessionPrincipal is the principal of a signed-in session: an admin of
// its account, with no key (KeyID 0, KeyPrefix "").
func SessionPrincipal(accountID int64, accountName string) Principal {
	return Principal{AccountID: accountID, AccountName: accountName, Role: RoleAdmin}
}

// Messages of the 401 answers.
const (
	msgMissing   = "this route needs an API key in the x-api-key header"
	msgMalformed = "the x-api-key header does not hold an API key (atst_ followed by 32 bytes in base58)"
	msgUnknown   = "unknown API key"
	msgRevoked   = "this API key was revoked"
)

func unauthorized(c *fiber.Ctx, msg string) error {
	c.Set(fiber.HeaderWWWAuthenticate, `ApiKey header="x-api-key"`)
	return apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized, "%s", msg)
}

// Require returns middleware that admits requests with a valid key and
// stores their Principal. A malformed key is refused without any lookup;
// a well-formed one is looked up by prefix (cached per node for at most
// CacheTTL) and its SHA-256 compared in constant time.
//
// Every answer of a route behind it is private, no-store (whoever answers:
// the route, the pay-per-request seam, or an error): it depends on who
// asks, so no shared cache may keep it and no cache may store it.
func (s *Service) Require(opt RequireOptions) fiber.Handler {
	return func(c *fiber.Ctx) error {
		httpcache.Private(c)
		if c.Get(Header) == "" && opt.OnMissingKey != nil {
			s.m.delegated.Inc()
			return opt.OnMissingKey(c)
		}
		if err := s.admit(c, opt.AllowSession); err != nil {
			return err
		}
		return c.Next()
	}
}

// admit checks the request's key and stores its Principal; an error is the
// answer to send (401, or 503 when the check cannot be made).
func (s *Service) admit(c *fiber.Ctx, allowSession bool) error {
	httpcache.Private(c)
	raw := c.Get(Header)
	if raw == "" && allowSession && s.opt.Sessions != nil {
		p, ok, err := s.opt.Sessions.Principal(c)
		if err != nil {
			s.m.auth.WithLabelValues("session_refused").Inc()
			return err
		}
		if ok {
			s.m.auth.WithLabelValues("session").Inc()
			c.Locals(principalKey{}, p)
			return nil
		}
	}
	if raw == "" {
		s.m.auth.WithLabelValues("missing").Inc()
		return unauthorized(c, msgMissing)
	}
	p, reason, err := s.Authenticate(c.UserContext(), raw)
	if err != nil {
		s.m.auth.WithLabelValues("error").Inc()
		if store.IsUnavailable(err) {
			return apierror.Unavailable("cannot check the API key now: the database is unavailable; try again shortly")
		}
		return err
	}
	s.m.auth.WithLabelValues(reason).Inc()
	switch reason {
	case "ok":
	case "malformed":
		return unauthorized(c, msgMalformed)
	case "revoked":
		return unauthorized(c, msgRevoked)
	default:
		return unauthorized(c, msgUnknown)
	}
	c.Locals(principalKey{}, p)
	return nil
}

// dummyHash is compared against when no key has the presented prefix, so
// an unknown prefix costs the same comparison as a known one.
var dummyHash = Hash("atst_")

// Authenticate checks a presented key. reason is "ok", "malformed",
// "unknown" or "revoked"; err is set only when the check could not be made
// (the database is unavailable). key is not retained.
func (s *Service) Authenticate(ctx context.Context, key string) (p Principal, reason string, err error) {
	prefix, hash, ok := Parse(key)
	if !ok {
		return p, "malformed", nil
	}
	prefix = strings.Clone(prefix) // key may be a Fiber buffer; the prefix is kept in the cache
	k, err := s.lookup(ctx, prefix)
	if err != nil {
		return p, "", fmt.Errorf("look up api key %s: %w", prefix, err)
	}
	want := dummyHash
	if k != nil {
		want = k.Hash
	}
	if subtle.ConstantTimeCompare(hash[:], want[:]) != 1 || k == nil {
		return p, "unknown", nil
	}
	if k.Revoked() {
		return p, "revoked", nil
	}
	s.touches.touch(k.ID, s.opt.Now())
	return Principal{AccountID: k.AccountID, AccountName: k.AccountName, KeyID: k.ID, KeyPrefix: k.Prefix, Role: Role(k.Role)}, "ok", nil
}
