package webhookapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/egress"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/gofiber/fiber/v2"
)

// Codes of the webhook routes beyond the common ones.
const (
	CodeWebhookLimitReached = "WEBHOOK_LIMIT_REACHED"
	CodeDeliveryNotFound    = "DELIVERY_NOT_FOUND"
	CodeWebhookInactive     = "WEBHOOK_INACTIVE"
	CodeRecoveriesRunning   = "RECOVERIES_RUNNING"
)

// Paging of the routes.
const (
	listDefaultLimit = 25
	listMaxLimit     = 100
	logDefaultLimit  = 50
	logMaxLimit      = 100
	maxOffset        = 100_000
	resolveTimeout   = 3 * time.Second
)

var (
	webhookIDPattern  = regexp.MustCompile(`^wh_[0-9a-f]{24}$`)
	deliveryIDPattern = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)
)

// APIDeps are what the routes work with: their Config, and their
// connections and collaborators.
type APIDeps struct {
	Store          *store.Store // required
	Queue          *queue.Queue // required: manual retries are queued at once
	webhook.Config              // the tunables, from settings; Config.Keys nil: every route answers 503
	Logger         *slog.Logger // default slog.Default()
	// Origin is the public origin: deliveries' links are absolute on it
	// (zero: paths). The same as the workers'.
	Origin config.Origin
	// Resolver checks the host of a URL at creation (nil: the system's).
	Resolver egress.Resolver
	// Auth is the API-key middleware every route but the catalog is
	// behind (it also marks every answer private, no-store); required by
	// Routes.
	Auth fiber.Handler
	Now  func() time.Time
}

// API serves the /webhooks routes.
type API struct {
	opt    APIDeps
	policy egress.Policy
	log    *slog.Logger
}

// NewAPI returns the routes' handlers.
func NewAPI(opt APIDeps) (*API, error) {
	if opt.Store == nil || opt.Queue == nil {
		return nil, errors.New("webhook api: a store and a queue are required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &API{opt: opt, policy: egress.Policy{AllowLoopback: opt.Config.AllowLoopback}, log: opt.Logger}, nil
}

// Routes adds the webhook routes behind APIDeps.Auth.
func (a *API) Routes(r httpapi.Router) {
	if a.opt.Auth == nil {
		panic("webhook api: Routes needs APIDeps.Auth, the API-key middleware")
	}
	mw := []fiber.Handler{a.opt.Auth, onlyAdmins, a.enabled}
	route := func(method, path string, h fiber.Handler) {
		r.Route(method, path, append(append([]fiber.Handler{}, mw...), h)...)
	}
	// The catalog is public and cacheable: before /webhooks/:id.
	r.Route(http.MethodGet, "/webhooks/event-types", eventTypes)
	route(http.MethodPost, "/webhooks", a.create)
	route(http.MethodGet, "/webhooks", a.list)
	route(http.MethodGet, "/webhooks/:id", a.get)
	route(http.MethodPatch, "/webhooks/:id", a.update)
	route(http.MethodDelete, "/webhooks/:id", a.delete)
	route(http.MethodGet, "/webhooks/:id/deliveries", a.deliveries)
	route(http.MethodPost, "/webhooks/:id/deliveries/:deliveryId/retry", a.retry)
	route(http.MethodPost, "/webhooks/:id/test", a.test)
	route(http.MethodPost, "/webhooks/:id/verify", a.verify)
	route(http.MethodPost, "/webhooks/:id/recover", a.recover)
	route(http.MethodGet, "/webhooks/:id/recoveries/:recoveryId", a.recovery)
	route(http.MethodPost, "/webhooks/:id/rotate-secret", a.rotateSecret)
}

// onlyAdmins is the one place the key-role rule of CONTRACT.md applies to
// webhooks: only admin keys manage them, read keys get 403 FORBIDDEN.
var onlyAdmins = apikey.RequireRole(apikey.RoleAdmin)

func (a *API) enabled(c *fiber.Ctx) error {
	if !a.opt.Config.Enabled() {
		return apierror.Unavailable("webhooks are not enabled on this server (it has no ATTESTD_WEBHOOK_SECRET_KEYS)")
	}
	return c.Next()
}

// View is a webhook as the API shows it: never its secret.
type View struct {
	ID             string            `json:"id"`
	URL            string            `json:"url"`
	Events         []string          `json:"events"`
	Filter         Filter            `json:"filter"`
	Description    string            `json:"description"`
	Active         bool              `json:"active"`
	DisabledReason *string           `json:"disabledReason"`
	DisabledAt     *attestation.Time `json:"disabledAt"`
	FailingSince   *attestation.Time `json:"failingSince"`
	CreatedAt      attestation.Time  `json:"createdAt"`
	UpdatedAt      attestation.Time  `json:"updatedAt"`
	Verification   VerificationView  `json:"verification"`
	// SignatureScheme is v1 (HMAC), v1a (Ed25519) or both; PublicKey the
	// whpk_ key v1a signatures verify with (null without v1a).
	SignatureScheme string  `json:"signatureScheme"`
	PublicKey       *string `json:"publicKey"`
	// RateLimitPerSecond is the subscriber's own limit (null: the server's).
	RateLimitPerSecond *int32 `json:"rateLimitPerSecond"`
	// PreviousSecretExpiresAt: until then deliveries are signed with the
	// secret before the last rotation too (null: no overlap).
	PreviousSecretExpiresAt *attestation.Time `json:"previousSecretExpiresAt"`
}

// VerificationView is the state of a webhook's endpoint verification,
// which never stops deliveries: it sets which per-host cap they share.
// status: pending (a round of webhook.verify requests is under way),
// unverified (the round ended without the challenge echoed) or verified;
// at: when it became so (null: verified before verification existed);
// the attempts of the current round, when the next is due, why the last
// one failed. hostRateLimit is the cap (requests per second to the URL's
// host, shared with every account's webhooks in the same class) that
// applies now, verifiedHostRateLimit the one answering the challenge
// gives (null: no cap).
type VerificationView struct {
	Status                string            `json:"status"`
	At                    *attestation.Time `json:"at"`
	Attempts              int               `json:"attempts"`
	NextAttemptAt         *attestation.Time `json:"nextAttemptAt"`
	Error                 *string           `json:"error"`
	HostRateLimit         *int              `json:"hostRateLimit"`
	VerifiedHostRateLimit *int              `json:"verifiedHostRateLimit"`
}

// viewOf is w as the API shows it under the configuration c.
func viewOf(c webhook.Config, w store.Webhook) View {
	v := View{ID: w.ID, URL: w.URL, Events: w.Events, Filter: Filter{Agents: w.Agents, ActionTypes: w.ActionTypes},
		Description: w.Description, Active: w.Active, DisabledReason: w.DisabledReason,
		CreatedAt: attestation.At(w.CreatedAt), UpdatedAt: attestation.At(w.UpdatedAt)}
	v.DisabledAt, v.FailingSince = attestation.OptTime(w.DisabledAt), attestation.OptTime(w.FailingSince)
	v.Verification = VerificationView{Status: w.Verification, At: attestation.OptTime(w.VerificationAt),
		Attempts: w.VerifyAttempts, NextAttemptAt: attestation.OptTime(w.VerifyNextAt), Error: w.VerifyError,
		HostRateLimit: rateOrNil(c.UnverifiedHostRate), VerifiedHostRateLimit: rateOrNil(c.HostRate)}
	if w.Verification == store.VerificationVerified {
		v.Verification.HostRateLimit = v.Verification.VerifiedHostRateLimit
	}
	v.SignatureScheme, v.PublicKey, v.RateLimitPerSecond = w.SignatureScheme, w.PublicKey, w.RateLimit
	if w.SignatureScheme == store.SchemeV1 {
		v.PublicKey = nil // a key made for v1a earlier, not in use
	}
	if w.PreviousSecretSealed != nil && w.PreviousSecretUntil != nil && time.Now().Before(*w.PreviousSecretUntil) {
		v.PreviousSecretExpiresAt = attestation.OptTime(w.PreviousSecretUntil)
	}
	if v.Filter.Agents == nil {
		v.Filter.Agents = []string{}
	}
	if v.Filter.ActionTypes == nil {
		v.Filter.ActionTypes = []string{}
	}
	return v
}

// rateOrNil is a cap as the API shows it: null for none (0).
func rateOrNil(rate int) *int {
	if rate <= 0 {
		return nil
	}
	return &rate
}

// CreatedView is the answer to POST /webhooks: the view and the secret,
// shown this once.
type CreatedView struct {
	View
	Secret string `json:"secret"`
}

func principal(c *fiber.Ctx) (apikey.Principal, error) {
	p, ok := apikey.PrincipalFrom(c)
	if !ok {
		return p, apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized, "this route needs an API key in the x-api-key header")
	}
	return p, nil
}

// target is what every /webhooks/:id route starts with: the key's
// principal, no query parameters, and the checked :id.
func target(c *fiber.Ctx) (apikey.Principal, string, error) {
	p, err := principal(c)
	if err != nil {
		return p, "", err
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return p, "", err
	}
	id, err := webhookID(c)
	return p, id, err
}

// webhookErr maps a store error about webhook id to its answer.
func webhookErr(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	return httpapi.StoreError(err)
}

// webhookID reads and checks :id (a copy: Fiber reuses the buffer).
func webhookID(c *fiber.Ctx) (string, error) {
	id := c.Params("id")
	if !webhookIDPattern.MatchString(id) {
		return "", apierror.Invalid("webhook id must be wh_ followed by 24 hexadecimal digits, got %q", excerpt.Of(id, 64))
	}
	return strings.Clone(id), nil
}

func notFound(id string) error {
	return apierror.NotFound(apierror.CodeWebhookNotFound, "your account has no webhook %s", id)
}

// checkURL applies the URL policy and resolves the host.
func (a *API) checkURL(ctx context.Context, raw string) (string, error) {
	u, err := a.policy.CheckURL(raw)
	if err == nil {
		err = a.policy.CheckHost(ctx, a.opt.Resolver, u, resolveTimeout)
	}
	if err != nil {
		return "", apierror.Invalid("%s", err.Error())
	}
	return u.String(), nil
}

func newWebhookID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "wh_" + hex.EncodeToString(b[:]), nil
}

func (a *API) create(c *fiber.Ctx) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	body, err := httpapi.Body(c, maxBody)
	if err != nil {
		return err
	}
	req, err := parseBody(c.Get(fiber.HeaderContentType), body, "url", "events", "filter", "description")
	if err != nil {
		return err
	}
	if req.URL == nil || req.Events == nil {
		return apierror.Invalid(`url and events are required, such as {"url": "https://example.com/hooks", "events": ["attestation.created"]}`)
	}
	url, err := a.checkURL(c.UserContext(), *req.URL)
	if err != nil {
		return err
	}
	id, err := newWebhookID()
	if err != nil {
		return err
	}
	secret, err := signature.NewSecret()
	if err != nil {
		return err
	}
	sealed, keyID, err := a.opt.Config.Keys.Seal([]byte(secret), []byte(id))
	if err != nil {
		return err
	}
	w := store.Webhook{ID: id, AccountID: p.AccountID, URL: url, Events: *req.Events, SecretSealed: sealed, SecretKeyID: keyID}
	if req.Filter != nil {
		w.Agents, w.ActionTypes = req.Filter.Agents, req.Filter.ActionTypes
	}
	if req.Description != nil {
		w.Description = *req.Description
	}
	stored, err := a.opt.Store.InsertWebhook(c.UserContext(), w, a.opt.Config.MaxPerAccount)
	switch {
	case errors.Is(err, store.ErrWebhookLimit):
		return apierror.New(http.StatusConflict, CodeWebhookLimitReached,
			"the account already has %d webhooks; delete one first", a.opt.Config.MaxPerAccount)
	case errors.Is(err, store.ErrNotFound):
		return apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized, "unknown API key")
	case err != nil:
		return httpapi.StoreError(err)
	}
	v := viewOf(a.opt.Config, stored)
	a.log.Info("webhook created", "account", p.AccountID, "webhook", id, "url", url, "filter", describe(v.Events, v.Filter))
	c.Set(fiber.HeaderLocation, httpapi.Prefix+"/webhooks/"+id)
	return c.Status(http.StatusCreated).JSON(struct {
		Data CreatedView `json:"data"`
	}{CreatedView{View: v, Secret: secret}})
}

func (a *API) list(c *fiber.Ctx) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	q, err := httpapi.QueryParams(c, "limit", "offset")
	if err != nil {
		return err
	}
	limit, offset, err := httpapi.LimitOffset(q, listDefaultLimit, listMaxLimit, maxOffset)
	if err != nil {
		return err
	}
	hooks, total, err := a.opt.Store.ListWebhooks(c.UserContext(), p.AccountID, limit, offset)
	if err != nil {
		return httpapi.StoreError(err)
	}
	views := make([]View, len(hooks))
	for i, w := range hooks {
		views[i] = viewOf(a.opt.Config, w)
	}
	return c.JSON(struct {
		Data       []View             `json:"data"`
		Pagination httpapi.Pagination `json:"pagination"`
	}{views, httpapi.Pagination{Limit: limit, Offset: offset, Total: total}})
}

func (a *API) get(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	w, err := a.opt.Store.WebhookOf(c.UserContext(), p.AccountID, id)
	if err != nil {
		return webhookErr(err, id)
	}
	return c.JSON(struct {
		Data View `json:"data"`
	}{viewOf(a.opt.Config, w)})
}

func (a *API) update(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	body, err := httpapi.Body(c, maxBody)
	if err != nil {
		return err
	}
	req, err := parseBody(c.Get(fiber.HeaderContentType), body, "url", "events", "filter", "description", "active",
		"signatureScheme", "rateLimitPerSecond")
	if err != nil {
		return err
	}
	var patch store.WebhookPatch
	patch.SignatureScheme, patch.SetRateLimit, patch.RateLimit = req.SignatureScheme, req.RateLimitSet, req.RateLimit
	if req.URL != nil {
		url, err := a.checkURL(c.UserContext(), *req.URL)
		if err != nil {
			return err
		}
		patch.URL = &url
	}
	// Every check first: a refused PATCH changes nothing, not even the
	// key material v1a needs.
	if req.SignatureScheme != nil && *req.SignatureScheme != store.SchemeV1 {
		if err := a.ensureEd25519(c.UserContext(), p.AccountID, id); err != nil {
			return err
		}
	}
	patch.Events, patch.Description, patch.Active = req.Events, req.Description, req.Active
	if req.Filter != nil {
		patch.Agents, patch.ActionTypes = &req.Filter.Agents, &req.Filter.ActionTypes
	}
	w, err := a.opt.Store.UpdateWebhook(c.UserContext(), p.AccountID, id, patch)
	if err != nil {
		return webhookErr(err, id)
	}
	a.changed(c.UserContext(), id)
	a.log.Info("webhook updated", "account", p.AccountID, "webhook", id, "active", w.Active, "verification", w.Verification)
	return c.JSON(struct {
		Data View `json:"data"`
	}{viewOf(a.opt.Config, w)})
}

func (a *API) delete(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	err = a.opt.Store.DeleteWebhook(c.UserContext(), p.AccountID, id)
	if err != nil {
		return webhookErr(err, id)
	}
	a.changed(c.UserContext(), id)
	a.log.Info("webhook deleted", "account", p.AccountID, "webhook", id)
	return c.SendStatus(http.StatusNoContent)
}

// AttemptView is one entry of the delivery log.
type AttemptView struct {
	ID             int64             `json:"id"`
	DeliveryID     string            `json:"deliveryId"`
	EventID        string            `json:"eventId"`
	EventType      string            `json:"eventType"`
	DeliveryStatus string            `json:"deliveryStatus"`
	Attempt        int               `json:"attempt"`
	Manual         bool              `json:"manual"`
	AttemptedAt    attestation.Time  `json:"attemptedAt"`
	Succeeded      bool              `json:"succeeded"`
	StatusCode     *int32            `json:"statusCode"`
	LatencyMS      int32             `json:"latencyMs"`
	Error          *string           `json:"error"`
	Response       string            `json:"response"`
	NextAttemptAt  *attestation.Time `json:"nextAttemptAt"`
}

func (a *API) deliveries(c *fiber.Ctx) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	q, err := httpapi.QueryParams(c, "limit", "offset", "deliveryId", "cursor")
	if err != nil {
		return err
	}
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	limit, offset, err := httpapi.LimitOffset(q, logDefaultLimit, logMaxLimit, maxOffset)
	if err != nil {
		return err
	}
	delivery, filtered := q["deliveryId"]
	if filtered && !deliveryIDPattern.MatchString(delivery) {
		return apierror.Invalid("deliveryId must be msg_ followed by 32 hexadecimal digits, got %q", excerpt.Of(delivery, 64))
	}
	var before int64
	if cur, ok := q["cursor"]; ok {
		if offset != 0 {
			return apierror.Invalid("use either cursor or offset, not both")
		}
		if before, err = decodeAttemptCursor(cur); err != nil {
			return err
		}
	}
	// One more than the page: whether a next page exists.
	atts, total, err := a.opt.Store.ListAttempts(c.UserContext(), p.AccountID, id, delivery, limit+1, offset, before)
	if err != nil {
		return webhookErr(err, id)
	}
	var next string
	if len(atts) > limit {
		atts = atts[:limit]
		next = encodeAttemptCursor(atts[limit-1].ID)
	}
	views := make([]AttemptView, len(atts))
	for i, at := range atts {
		views[i] = AttemptView{ID: at.ID, DeliveryID: at.DeliveryID, EventID: webhook.EventID(at.EventID), EventType: at.EventType,
			DeliveryStatus: at.DeliveryStatus, Attempt: at.Attempt, Manual: at.Manual, AttemptedAt: attestation.At(at.At),
			Succeeded: at.Succeeded, StatusCode: at.StatusCode, LatencyMS: at.LatencyMS, Error: at.Error, Response: at.Response}
		views[i].NextAttemptAt = attestation.OptTime(at.NextAttemptAt)
	}
	return c.JSON(struct {
		Data       []AttemptView      `json:"data"`
		Pagination httpapi.Pagination `json:"pagination"`
	}{views, httpapi.Pagination{Limit: limit, Offset: offset, Total: total, NextCursor: next}})
}

// attemptCursorPrefix marks a delivery log cursor: the id of the last
// attempt of the page before, which the next page starts below.
const attemptCursorPrefix = "attempt:"

func encodeAttemptCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(attemptCursorPrefix + strconv.FormatInt(id, 10)))
}

// decodeAttemptCursor reads a cursor encodeAttemptCursor made; its length
// is checked before it is decoded.
func decodeAttemptCursor(s string) (int64, error) {
	bad := apierror.Invalid("cursor is not one this list gave (pagination.nextCursor), got %q", excerpt.Of(s, 64))
	if len(s) > 48 {
		return 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, bad
	}
	digits, ok := strings.CutPrefix(string(raw), attemptCursorPrefix)
	if !ok || len(digits) == 0 || digits[0] == '0' || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, bad
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, bad
	}
	return id, nil
}

// QueuedView answers the retry and test routes.
type QueuedView struct {
	DeliveryID string `json:"deliveryId"`
	EventID    string `json:"eventId"`
	EventType  string `json:"eventType"`
	Status     string `json:"status"`
}

func (a *API) retry(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	did := c.Params("deliveryId")
	if !deliveryIDPattern.MatchString(did) {
		return apierror.Invalid("delivery id must be msg_ followed by 32 hexadecimal digits, got %q", excerpt.Of(did, 64))
	}
	did = strings.Clone(did)
	if w, err := a.opt.Store.WebhookOf(c.UserContext(), p.AccountID, id); errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	} else if err != nil {
		return httpapi.StoreError(err)
	} else if !w.Active {
		return apierror.New(http.StatusConflict, CodeWebhookInactive,
			"webhook %s is inactive; turn it back on with PATCH {\"active\": true} first", id)
	}
	d, err := a.opt.Store.DeliveryOf(c.UserContext(), p.AccountID, id, did)
	if errors.Is(err, store.ErrNotFound) {
		return apierror.NotFound(CodeDeliveryNotFound, "webhook %s has no delivery %s (or it was pruned)", id, did)
	}
	if err != nil {
		return httpapi.StoreError(err)
	}
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	now := a.opt.Now()
	job := queue.Job{ID: d.ID + ":m" + hex.EncodeToString(suffix[:]), Delivery: d.ID, Webhook: d.WebhookID, Event: d.Event.ID,
		Type: d.Event.Type, Created: d.Event.CreatedAt.UnixMilli(), Queued: now.UnixMilli(), Attempts: d.Attempts, Manual: true,
		Body: webhook.Body(d.Event, a.opt.Origin)}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	if err := a.opt.Queue.Enqueue(ctx, []queue.Job{job}); err != nil {
		a.log.Warn("manual retry not queued", "webhook", id, "delivery", did, "err", err)
		return apierror.Unavailable("cannot queue the retry now: the queue is unavailable; try again shortly")
	}
	a.log.Info("manual retry queued", "account", p.AccountID, "webhook", id, "delivery", did)
	return c.Status(http.StatusAccepted).JSON(struct {
		Data QueuedView `json:"data"`
	}{QueuedView{DeliveryID: d.ID, EventID: webhook.EventID(d.Event.ID), EventType: d.Event.Type, Status: "queued"}})
}

func (a *API) test(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	if err := noBody(c); err != nil {
		return err
	}
	d, err := a.opt.Store.InsertTestEvent(c.UserContext(), p.AccountID, id, testPayload(id, a.opt.Now()))
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return httpapi.StoreError(fmt.Errorf("test event: %w", err))
	}
	a.log.Info("test event queued", "account", p.AccountID, "webhook", id, "delivery", d.ID)
	return c.Status(http.StatusAccepted).JSON(struct {
		Data QueuedView `json:"data"`
	}{QueuedView{DeliveryID: d.ID, EventID: webhook.EventID(d.OutboxID), EventType: store.EventWebhookTest, Status: "queued"}})
}

// noBody refuses a body on a route that takes none.
func noBody(c *fiber.Ctx) error {
	body, err := httpapi.Body(c, maxBody)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		return apierror.Invalid("this route takes no body")
	}
	return nil
}

// verify starts a new endpoint verification round of the webhook: its
// deliveries go on, under the unverified endpoints' per-host cap until the
// receiver answers the challenge again.
func (a *API) verify(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	if err := noBody(c); err != nil {
		return err
	}
	w, err := a.opt.Store.RestartVerification(c.UserContext(), p.AccountID, id)
	if err != nil {
		return webhookErr(err, id)
	}
	a.log.Info("webhook verification restarted", "account", p.AccountID, "webhook", id)
	return c.Status(http.StatusAccepted).JSON(struct {
		Data View `json:"data"`
	}{viewOf(a.opt.Config, w)})
}

// changed tells the workers to read webhook id again now (best effort:
// their cache expires within 5 seconds anyway).
func (a *API) changed(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := a.opt.Queue.NotifyChanged(ctx, id); err != nil {
		a.log.Warn("could not tell the workers a webhook changed; they notice within 5 s", "webhook", id, "err", err)
	}
}
