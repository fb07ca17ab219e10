package apikey

import (
	"fmt"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// Role is what a key may do. Roles are ordered: a higher role may do
// everything a lower one may.
type Role string

// The roles, lowest first.
const (
	// RoleRead keys call the premium routes only. POST /keys makes them by
	// default.
	RoleRead Role = "read"
	// RoleAdmin keys also manage their account's keys and webhooks. The CLI
	// makes them by default; POST /keys makes one only when an admin key
	// asks for it.
	RoleAdmin Role = "admin"
)

// Roles lists every role, lowest first.
var Roles = []Role{RoleRead, RoleAdmin}

// rank orders the roles; 0 is not a role.
func (r Role) rank() int {
	switch r {
	case RoleRead:
		return 1
	case RoleAdmin:
		return 2
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a key of role r may act with role need: r is
// need or higher. An invalid role allows nothing.
func (r Role) Allows(need Role) bool { return r.Valid() && need.Valid() && r.rank() >= need.rank() }

// ParseRole reads a role name ("read" or "admin").
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.Valid() {
		return r, nil
	}
	return "", fmt.Errorf("role must be %q or %q, got %q", RoleRead, RoleAdmin, s)
}

// atMost lists the roles r allows acting on (r and every lower role), as
// the store names them.
func (r Role) atMost() []string {
	var out []string
	for _, x := range Roles {
		if r.Allows(x) {
			out = append(out, string(x))
		}
	}
	return out
}

// RequireRole returns middleware for a route behind Require: it answers 403
// FORBIDDEN unless the request's key has role need or higher, and 401 when
// the request was not authenticated by a key at all (a payment admitted by
// RequireOptions.OnMissingKey carries no role).
func RequireRole(need Role) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := checkRole(c, need); err != nil {
			return err
		}
		return c.Next()
	}
}

func checkRole(c *fiber.Ctx, need Role) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	if !p.Role.Allows(need) {
		return apierror.Forbidden("this route needs a key with the %s role; this key has the %s role", need, p.Role)
	}
	return nil
}

// RequireAdmin returns one handler for routes that manage the account (its
// keys, its webhooks): a valid key, as Require checks it, of the admin role,
// or a signed-in session of the account (Deps.Sessions).
// Use it alone in front of the route's handler:
//
//	api.Route(http.MethodPost, "/webhooks", keys.RequireAdmin(), createWebhook)
func (s *Service) RequireAdmin() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := s.admit(c, true); err != nil {
			return err
		}
		if err := checkRole(c, RoleAdmin); err != nil {
			return err
		}
		return c.Next()
	}
}
