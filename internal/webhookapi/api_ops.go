package webhookapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/gofiber/fiber/v2"
)

// Bounds of recoveries and rotations.
const (
	// MaxRecoveryWindow is the longest window a recovery covers.
	MaxRecoveryWindow = 14 * 24 * time.Hour
	// DefaultOverlap is how long the secret before a rotation is still
	// signed with, unless the request says otherwise.
	DefaultOverlap = 24 * time.Hour
	// MaxOverlap bounds overlapSeconds.
	MaxOverlap = 7 * 24 * time.Hour
	// clockSkew is how far in the future a window's end may be (it is
	// then taken as now).
	clockSkew = time.Minute
	// CodeSecretChanged: a concurrent rotation.
	CodeSecretChanged = "CONFLICT"
)

var recoveryIDPattern = regexp.MustCompile(`^rcv_[0-9a-f]{24}$`)

// catalogCacheControl: the catalog changes only with a release.
const catalogCacheControl = "public, max-age=3600"

// eventTypes serves the event catalog: public (it is the same for
// everyone), cacheable, with a strong ETag.
func eventTypes(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, catalogCacheControl)
	c.Set(fiber.HeaderETag, catalogETag)
	if httpcache.NoneMatch(c.Request().Header.PeekAll(fiber.HeaderIfNoneMatch), []byte(catalogETag)) {
		return c.SendStatus(http.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(catalogJSON)
}

// RecoveryView is a recovery as the API shows it. queued is how many
// deliveries it sends again: those of the window that matched when it was
// asked for, each marked as its own, so the count is what it sends;
// processed how many are back on the queue so far; skipped how many of the
// count were not sent after all (acknowledged meanwhile by a manual retry
// under status failed, pruned, or the webhook was deactivated); state
// running or done (then processed + skipped = queued).
type RecoveryView struct {
	ID         string            `json:"id"`
	WebhookID  string            `json:"webhookId"`
	Since      attestation.Time  `json:"since"`
	Until      attestation.Time  `json:"until"`
	Status     string            `json:"status"`
	State      string            `json:"state"`
	Queued     int64             `json:"queued"`
	Processed  int64             `json:"processed"`
	Skipped    int64             `json:"skipped"`
	CreatedAt  attestation.Time  `json:"createdAt"`
	FinishedAt *attestation.Time `json:"finishedAt"`
}

func recoveryView(r store.Recovery) RecoveryView {
	st := "all"
	if r.OnlyFailed {
		st = store.DeliveryFailed
	}
	return RecoveryView{ID: r.ID, WebhookID: r.WebhookID, Since: attestation.At(r.Since), Until: attestation.At(r.Until), Status: st,
		State: r.State, Queued: r.Total, Processed: r.Queued, Skipped: r.Skipped, CreatedAt: attestation.At(r.CreatedAt), FinishedAt: attestation.OptTime(r.FinishedAt)}
}

// jsonObject reads an optional JSON object body (empty: no fields) with
// the allowed fields.
func jsonObject(c *fiber.Ctx, allowed ...string) (map[string]json.RawMessage, error) {
	body, err := httpapi.Body(c, maxBody)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	if err := httpapi.RequireJSON(c.Get(fiber.HeaderContentType), ""); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := jsonbody.Decode(body, &fields); err != nil || fields == nil {
		return nil, jsonbody.Refusal(err, "the body must be a JSON object with the fields %s", strings.Join(allowed, ", "))
	}
	for name := range fields {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return nil, apierror.Invalid("unknown field %q; allowed: %s", excerpt.Of(name, 64), strings.Join(allowed, ", "))
		}
	}
	return fields, nil
}

// windowPrecision is the precision a recovery window is stored at
// (PostgreSQL's timestamptz): both ends are cut to it before they are
// checked, so a window is checked as it is stored.
const windowPrecision = time.Microsecond

// parseInstant reads an RFC 3339 time (a JSON string) as name, cut to the
// microsecond.
func parseInstant(name string, raw json.RawMessage) (time.Time, error) {
	s, err := str(name, raw)
	if err != nil {
		return time.Time{}, err
	}
	if len(*s) > 40 {
		return time.Time{}, apierror.Invalid("%s must be an RFC 3339 time such as 2026-11-21T10:00:00Z", name)
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil || t.Year() < 2000 || t.Year() > 9999 {
		return time.Time{}, apierror.Invalid("%s must be an RFC 3339 time such as 2026-11-21T10:00:00Z, got %q", name, excerpt.Of(*s, 40))
	}
	return t.UTC().Truncate(windowPrecision), nil
}

// recoveryRequest checks a recover body against now and the retention.
// Both ends are taken at the microsecond (the precision they are stored
// at): a window shorter than that is empty and refused, never a 500.
func recoveryRequest(fields map[string]json.RawMessage, now time.Time, retention time.Duration) (store.Recovery, error) {
	var r store.Recovery
	now = now.UTC().Truncate(windowPrecision)
	raw, ok := fields["since"]
	if !ok {
		return r, apierror.Invalid(`since is required, such as {"since": "2026-11-21T10:00:00Z"}`)
	}
	var err error
	if r.Since, err = parseInstant("since", raw); err != nil {
		return r, err
	}
	r.Until, r.OpenEnded = now, true
	if raw, ok := fields["until"]; ok && string(raw) != "null" {
		if r.Until, err = parseInstant("until", raw); err != nil {
			return r, err
		}
		r.OpenEnded = false
		if r.Until.After(now.Add(clockSkew)) {
			return r, apierror.Invalid("until is in the future; leave it out to mean now")
		}
		if r.Until.After(now) {
			r.Until = now
		}
	}
	r.OnlyFailed = true
	if raw, ok := fields["status"]; ok {
		s, err := str("status", raw)
		if err != nil {
			return r, err
		}
		switch *s {
		case "failed":
		case "all":
			r.OnlyFailed = false
		default:
			return r, apierror.Invalid("status must be failed (the default) or all, got %q", excerpt.Of(*s, 32))
		}
	}
	switch {
	case !r.Since.Before(r.Until):
		return r, apierror.Invalid("since must be before until (and before now), by at least a microsecond: windows are kept to the microsecond")
	case r.Until.Sub(r.Since) > MaxRecoveryWindow:
		return r, apierror.Invalid("the window is %s long; at most %s (14 days)", r.Until.Sub(r.Since).Round(time.Second), MaxRecoveryWindow)
	case r.Since.Before(now.Add(-retention)):
		return r, apierror.Invalid("since is before the delivery log's retention (%s): nothing older is kept", retention)
	}
	return r, nil
}

func (a *API) recover(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	fields, err := jsonObject(c, "since", "until", "status")
	if err != nil {
		return err
	}
	r, err := recoveryRequest(fields, a.opt.Now().UTC(), a.opt.Config.Retention)
	if err != nil {
		return err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	r.ID, r.WebhookID = "rcv_"+hex.EncodeToString(b[:]), id
	got, started, err := a.opt.Store.StartRecovery(c.UserContext(), p.AccountID, r)
	switch {
	case errors.Is(err, store.ErrWebhookInactive):
		return apierror.New(http.StatusConflict, CodeWebhookInactive,
			"webhook %s is inactive; turn it back on with PATCH {\"active\": true} first", id)
	case errors.Is(err, store.ErrTooManyRecoveries):
		return apierror.New(http.StatusConflict, CodeRecoveriesRunning,
			"%d recoveries of other windows of webhook %s are running; wait for one to finish (GET its recovery) or ask for the same window again",
			store.MaxRunningRecoveries, id)
	case err != nil:
		return webhookErr(err, id)
	}
	status := http.StatusOK // the same window runs already
	if started {
		status = http.StatusAccepted
		a.log.Info("webhook recovery started", "account", p.AccountID, "webhook", id, "recovery", got.ID, "since", got.Since,
			"until", got.Until, "only_failed", got.OnlyFailed, "deliveries", got.Total)
	}
	c.Set(fiber.HeaderLocation, httpapi.Prefix+"/webhooks/"+id+"/recoveries/"+got.ID)
	return c.Status(status).JSON(struct {
		Data RecoveryView `json:"data"`
	}{recoveryView(got)})
}

func (a *API) recovery(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	rid := c.Params("recoveryId")
	if !recoveryIDPattern.MatchString(rid) {
		return apierror.Invalid("recovery id must be rcv_ followed by 24 hexadecimal digits, got %q", excerpt.Of(rid, 64))
	}
	r, err := a.opt.Store.RecoveryOf(c.UserContext(), p.AccountID, id, strings.Clone(rid))
	if errors.Is(err, store.ErrNotFound) {
		return apierror.NotFound(apierror.CodeNotFound, "webhook %s has no recovery %s", id, rid)
	}
	if err != nil {
		return httpapi.StoreError(err)
	}
	return c.JSON(struct {
		Data RecoveryView `json:"data"`
	}{recoveryView(r)})
}

// sealedMaterial is a webhook's signing material, opened.
type sealedMaterial struct {
	secret, previous []byte
	until            *time.Time
	seed             []byte
	publicKey        *string
}

// open opens every sealed value of w.
func (a *API) open(w store.Webhook) (sealedMaterial, error) {
	var m sealedMaterial
	keys := a.opt.Config.Keys
	var err error
	if m.secret, err = keys.Open(w.SecretSealed, w.SecretKeyID, []byte(w.ID)); err != nil {
		return m, err
	}
	if w.PreviousSecretSealed != nil {
		if m.previous, err = keys.Open(w.PreviousSecretSealed, w.SecretKeyID, []byte(w.ID)); err != nil {
			return m, err
		}
		m.until = w.PreviousSecretUntil
	}
	if w.Ed25519Sealed != nil {
		if m.seed, err = keys.Open(w.Ed25519Sealed, w.SecretKeyID, webhook.Ed25519AAD(w.ID)); err != nil {
			return m, err
		}
		m.publicKey = w.PublicKey
	}
	return m, nil
}

// seal seals m under the newest key.
func (a *API) seal(id string, m sealedMaterial) (store.Secrets, error) {
	keys := a.opt.Config.Keys
	var s store.Secrets
	var err error
	if s.Secret, s.KeyID, err = keys.Seal(m.secret, []byte(id)); err != nil {
		return s, err
	}
	if m.previous != nil {
		if s.Previous, _, err = keys.Seal(m.previous, []byte(id)); err != nil {
			return s, err
		}
		s.PreviousUntil = m.until
	}
	if m.seed != nil {
		if s.Ed25519, _, err = keys.Seal(m.seed, webhook.Ed25519AAD(id)); err != nil {
			return s, err
		}
		s.PublicKey = m.publicKey
	}
	return s, nil
}

// changeSecrets reads the webhook, lets change alter its opened material,
// and stores it sealed under the newest key, if no other change came
// between.
func (a *API) changeSecrets(ctx context.Context, accountID int64, id string, change func(*sealedMaterial) (bool, error)) (store.Webhook, error) {
	w, err := a.opt.Store.WebhookOf(ctx, accountID, id)
	if err != nil {
		return w, webhookErr(err, id)
	}
	m, err := a.open(w)
	if err != nil {
		return w, err
	}
	write, err := change(&m)
	if err != nil || !write {
		return w, err
	}
	sec, err := a.seal(id, m)
	if err != nil {
		return w, err
	}
	w, err = a.opt.Store.SetSecrets(ctx, accountID, id, w.SecretSealed, sec)
	switch {
	case errors.Is(err, store.ErrSecretChanged):
		return w, err // the caller decides: a 409 or another try
	case err != nil:
		return w, webhookErr(err, id)
	}
	return w, nil
}

// errSecretChanged is the answer to a rotation that lost a race.
func errSecretChanged() error {
	return apierror.New(http.StatusConflict, CodeSecretChanged, "the webhook's secret changed meanwhile (another rotation); try again")
}

// ensureEd25519 gives the webhook an Ed25519 key when it has none. It is
// idempotent, so a concurrent change (two PATCHes to v1a, a rotation) is
// met by reading again: a PATCH never answers 409.
func (a *API) ensureEd25519(ctx context.Context, accountID int64, id string) error {
	for {
		_, err := a.changeSecrets(ctx, accountID, id, func(m *sealedMaterial) (bool, error) {
			if m.seed != nil {
				return false, nil
			}
			priv, pub, err := signature.NewEd25519()
			if err != nil {
				return false, err
			}
			m.seed, m.publicKey = priv.Seed(), &pub
			return true, nil
		})
		if !errors.Is(err, store.ErrSecretChanged) || ctx.Err() != nil {
			return err
		}
	}
}

func (a *API) rotateSecret(c *fiber.Ctx) error {
	p, id, err := target(c)
	if err != nil {
		return err
	}
	fields, err := jsonObject(c, "overlapSeconds")
	if err != nil {
		return err
	}
	overlap := DefaultOverlap
	if raw, ok := fields["overlapSeconds"]; ok {
		n, err := boundedInt("overlapSeconds", raw, 0, int64(MaxOverlap/time.Second))
		if err != nil {
			return err
		}
		overlap = time.Duration(n) * time.Second
	}
	secret, err := signature.NewSecret()
	if err != nil {
		return err
	}
	now := a.opt.Now()
	w, err := a.changeSecrets(c.UserContext(), p.AccountID, id, func(m *sealedMaterial) (bool, error) {
		m.previous, m.until = nil, nil
		if overlap > 0 {
			until := now.Add(overlap)
			m.previous, m.until = m.secret, &until
		}
		m.secret = []byte(secret)
		return true, nil
	})
	if errors.Is(err, store.ErrSecretChanged) {
		return errSecretChanged()
	}
	if err != nil {
		return err
	}
	a.changed(c.UserContext(), id)
	a.log.Info("webhook secret rotated", "account", p.AccountID, "webhook", id, "overlap", overlap.String())
	return c.JSON(struct {
		Data CreatedView `json:"data"`
	}{CreatedView{View: viewOf(a.opt.Config, w), Secret: secret}})
}
