package apikey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/store"
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
	CreatedAt  attestation.Time  `json:"createdAt"`
	LastUsedAt *attestation.Time `json:"lastUsedAt"`
	Revoked    bool              `json:"revoked"`
	RevokedAt  *attestation.Time `json:"revokedAt"`
}

// View returns the API shape of a stored key.
func View(k store.APIKey) KeyView {
	v := KeyView{Prefix: k.Prefix, Account: k.AccountName, Label: k.Label, CreatedAt: attestation.At(k.CreatedAt), Revoked: k.Revoked()}
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

// Routes adds the account holder's key routes, each behind Require:
// POST /keys, GET /keys and DELETE /keys/:prefix.
func (s *Service) Routes(api *app.API) {
	auth := s.Require(RequireOptions{})
	api.Route(http.MethodPost, "/keys", auth, s.createKey)
	api.Route(http.MethodGet, "/keys", auth, s.listKeys)
	api.Route(http.MethodDelete, "/keys/:prefix", auth, s.revokeKey)
}

func (s *Service) createKey(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	body, err := app.Body(c, maxCreateBody)
	if err != nil {
		return err
	}
	label, err := parseCreateBody(c.Get(fiber.HeaderContentType), body)
	if err != nil {
		return err
	}
	created, err := s.Create(c.UserContext(), p.AccountID, label)
	switch {
	case errors.Is(err, store.ErrKeyLimit):
		return apierror.New(http.StatusConflict, CodeKeyLimitReached,
			"the account already has %d active keys; revoke one first", s.opt.MaxActiveKeys)
	case errors.Is(err, store.ErrNotFound):
		return unauthorized(c, msgUnknown) // the account vanished under us
	case err != nil:
		return app.StoreError(err)
	}
	return c.Status(http.StatusCreated).JSON(struct {
		Data CreatedView `json:"data"`
	}{CreatedView{KeyView: View(created.Key), Key: created.Secret}})
}

// parseCreateBody reads the optional {"label": "..."} of POST /keys. An
// empty body means no label.
func parseCreateBody(contentType string, body []byte) (string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return "", nil
	}
	if len(body) > maxCreateBody {
		return "", apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge,
			"the body must be at most %d bytes", maxCreateBody)
	}
	if !isJSON(contentType) {
		return "", apierror.New(http.StatusUnsupportedMediaType, apierror.CodeUnsupportedMedia,
			"send the body as application/json")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return "", apierror.Invalid(`the body must be a JSON object such as {"label": "ci"}`)
	}
	var label string
	for name, raw := range fields {
		if name != "label" {
			return "", apierror.Invalid("unknown field %q; allowed: label", name)
		}
		if err := json.Unmarshal(raw, &label); err != nil || (len(raw) > 0 && raw[0] != '"') {
			return "", apierror.Invalid("label must be a string")
		}
	}
	if err := ValidateLabel(label); err != nil {
		return "", apierror.Invalid("%s", err.Error())
	}
	return label, nil
}

// isJSON reports whether a Content-Type is application/json (any parameters).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func (s *Service) listKeys(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	q, err := app.QueryParams(c, "limit", "offset")
	if err != nil {
		return err
	}
	v, present := q["limit"]
	limit, err := app.ParseLimit(v, present, ListDefaultLimit, ListMaxLimit)
	if err != nil {
		return err
	}
	v, present = q["offset"]
	offset, err := app.ParseOffset(v, present, listMaxOffset)
	if err != nil {
		return err
	}
	keys, total, err := s.List(c.UserContext(), p.AccountID, limit, offset)
	if err != nil {
		return app.StoreError(err)
	}
	views := make([]KeyView, len(keys))
	for i, k := range keys {
		views[i] = View(k)
	}
	return c.JSON(struct {
		Data       []KeyView      `json:"data"`
		Pagination app.Pagination `json:"pagination"`
	}{views, app.Pagination{Limit: limit, Offset: offset, Total: total}})
}

func (s *Service) revokeKey(c *fiber.Ctx) error {
	p, ok := PrincipalFrom(c)
	if !ok {
		return unauthorized(c, msgMissing)
	}
	if _, err := app.QueryParams(c); err != nil {
		return err
	}
	prefix := c.Params("prefix")
	if !ValidPrefix(prefix) {
		return apierror.Invalid("prefix must be the 8 base58 characters after atst_ of one of your keys, got %q", prefix)
	}
	prefix = string([]byte(prefix)) // copy: Fiber reuses the buffer and the prefix is announced
	_, err := s.Revoke(c.UserContext(), prefix, p.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return apierror.NotFound(apierror.CodeKeyNotFound, "your account has no key with prefix %s", prefix)
	}
	if err != nil {
		return app.StoreError(fmt.Errorf("revoke key: %w", err))
	}
	return c.SendStatus(http.StatusNoContent)
}
