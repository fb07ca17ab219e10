package apikey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
)

// Limits of the key routes.
const (
	ListDefaultLimit = 100
	ListMaxLimit     = 100
	listMaxOffset    = 100_000
	maxCreateBody    = 4 << 10
	// CodeKeyLimitReached answers POST /keys when the account already holds
	// the most active keys allowed.
	CodeKeyLimitReached = "KEY_LIMIT_REACHED"
)

// KeyView is a key as the API shows it: never the secret or its hash.
type KeyView struct {
	Prefix     string            `json:"prefix"`
	Account    string            `json:"account"`
	Label      string            `json:"label"`
	Role       Role              `json:"role"`
	CreatedAt  attestation.Time  `json:"createdAt"`
	LastUsedAt *attestation.Time `json:"lastUsedAt"`
	Revoked    bool              `json:"revoked"`
	RevokedAt  *attestation.Time `json:"revokedAt"`
}

// View returns the API shape of a stored key.
func View(k store.APIKey) KeyView {
	v := KeyView{Prefix: k.Prefix, Account: k.AccountName, Label: k.Label, Role: Role(k.Role), CreatedAt: attestation.At(k.CreatedAt), Revoked: k.Revoked()}
	if k.LastUsedAt != nil {
		v.LastUsedAt = attestation.OptTime(k.LastUsedAt)
	}
	if k.RevokedAt != nil {
		v.RevokedAt = attestation.OptTime(k.RevokedAt)
	}
	return v
}

// CreatedView is the answer to POST /keys: the key's view plus the key
// itself, shown this once.
type CreatedView struct {
	KeyView
	Key string `json:"key"`
}

// Routes adds the account holder's key routes, each behind RequireAdmin
// (a read key is 403 FORBIDDEN there): POST /keys, GET /keys and
// DELETE /keys/:prefix.
func (s *Service) Routes(r httpapi.Router) {
	r.Route(http.MethodPost, "/keys", s.RequireAdmin(), s.createKey)
	r.Route(http.MethodGet, "/keys", s.RequireAdmin(), s.listKeys)
	r.Route(http.MethodDelete, "/keys/:prefix", s.RequireAdmin(), s.revokeKey)
}

func (s *Service) createKey(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	body, err := httpapi.Body(c, maxCreateBody)
	if err != nil {
		return err
	}
	req, err := parseCreateBody(c.Get(fiber.HeaderContentType), body)
	if err != nil {
		return err
	}
	if !p.Role.Allows(req.role) {
		return apierror.Forbidden("a key with the %s role cannot create a key with the %s role", p.Role, req.role)
	}
	created, err := s.CreateWithRole(c.UserContext(), p.AccountID, req.label, req.role)
	switch {
	case errors.Is(err, store.ErrKeyLimit):
		return apierror.New(http.StatusConflict, CodeKeyLimitReached,
			"the account already has %d active keys; revoke one first", s.opt.MaxActiveKeys)
	case errors.Is(err, store.ErrNotFound):
		return unauthorized(c, msgUnknown) // the account vanished under us
	case err != nil:
		return httpapi.StoreError(err)
	}
	return c.Status(http.StatusCreated).JSON(struct {
		Data CreatedView `json:"data"`
	}{CreatedView{KeyView: View(created.Key), Key: created.Secret}})
}

// createRequest is the body of POST /keys.
type createRequest struct {
	label string
	role  Role
}

// parseCreateBody reads the optional {"label": "...", "role": "read"|"admin"}
// of POST /keys. An empty body means no label; a missing role means read.
func parseCreateBody(contentType string, body []byte) (createRequest, error) {
	req := createRequest{role: RoleRead}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	if len(body) > maxCreateBody {
		return req, apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge,
			"the body must be at most %d bytes", maxCreateBody)
	}
	if err := httpapi.RequireJSON(contentType, ""); err != nil {
		return req, err
	}
	var fields map[string]json.RawMessage
	if err := jsonbody.Decode(body, &fields); err != nil || fields == nil {
		return req, jsonbody.Refusal(err, `the body must be a JSON object such as {"label": "ci", "role": "read"}`)
	}
	for name, raw := range fields {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || (len(raw) > 0 && raw[0] != '"') {
			if name == "label" || name == "role" {
				return req, apierror.Invalid("%s must be a string", name)
			}
		}
		switch name {
		case "label":
			req.label = v
		case "role":
			r, err := ParseRole(v)
			if err != nil {
				return req, apierror.Invalid("%s", err.Error())
			}
			req.role = r
		default:
			return req, apierror.Invalid("unknown field %q; allowed: label, role", name)
		}
	}
	if err := ValidateLabel(req.label); err != nil {
		return req, apierror.Invalid("%s", err.Error())
	}
	return req, nil
}

func (s *Service) listKeys(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	q, err := httpapi.QueryParams(c, "limit", "offset")
	if err != nil {
		return err
	}
	limit, offset, err := httpapi.LimitOffset(q, ListDefaultLimit, ListMaxLimit, listMaxOffset)
	if err != nil {
		return err
	}
	keys, total, err := s.List(c.UserContext(), p.AccountID, limit, offset)
	if err != nil {
		return httpapi.StoreError(err)
	}
	views := make([]KeyView, len(keys))
	for i, k := range keys {
		views[i] = View(k)
	}
	return c.JSON(struct {
		Data       []KeyView          `json:"data"`
		Pagination httpapi.Pagination `json:"pagination"`
	}{views, httpapi.Pagination{Limit: limit, Offset: offset, Total: total}})
}

func (s *Service) revokeKey(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	prefix := c.Params("prefix")
	if !ValidPrefix(prefix) {
		return apierror.Invalid("prefix must be the 8 base58 characters after atst_ of one of your keys, got %q", prefix)
	}
	prefix = string([]byte(prefix)) // copy: Fiber reuses the buffer and the prefix is announced
	_, err := s.RevokeAs(c.UserContext(), p, prefix)
	if errors.Is(err, ErrForbidden) {
		return apierror.Forbidden("a key with the %s role cannot revoke key %s, which has a higher role", p.Role, prefix)
	}
	if errors.Is(err, store.ErrNotFound) {
		return apierror.NotFound(apierror.CodeKeyNotFound, "your account has no key with prefix %s", prefix)
	}
	if err != nil {
		return httpapi.StoreError(fmt.Errorf("revoke key: %w", err))
	}
	return c.SendStatus(http.StatusNoContent)
}
