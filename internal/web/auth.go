package web

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/jsonbody"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// Names of the session cookie and of the CSRF header.
const (
	CookieName = "attestd_session"
	CSRFHeader = "X-CSRF-Token"
	// Statement is what the sign-in page asks the wallet to show.
	Statement     = "Sign in to the attestd console."
	maxSignInBody = 8 << 10
)

var (
	noncePattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
	tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
)

// NonceView is the answer to GET /auth/nonce: the nonce, and the other
// fields of the message the server will accept, to copy into it.
type NonceView struct {
	Nonce          string           `json:"nonce"`
	Domain         string           `json:"domain"`
	URI            string           `json:"uri"`
	Version        string           `json:"version"`
	ChainID        string           `json:"chainId"`
	Statement      string           `json:"statement"`
	IssuedAt       attestation.Time `json:"issuedAt"`
	ExpirationTime attestation.Time `json:"expirationTime"`
}

// SessionView describes a signed-in session.
type SessionView struct {
	Account   string           `json:"account"`
	Wallet    string           `json:"wallet"`
	CSRFToken string           `json:"csrfToken"`
	ExpiresAt attestation.Time `json:"expiresAt"`
}

// sessionRecord is what Redis holds for a session (under the SHA-256 of
// its cookie).
type sessionRecord struct {
	AccountID int64  `json:"a"`
	Account   string `json:"n"`
	Wallet    string `json:"w"`
	CSRF      string `json:"c"`
	Expires   int64  `json:"e"`
}

func (w *Web) nonceKey(n string) string   { return w.opt.Prefix + "nonce:" + n }
func (w *Web) sessionKey(t string) string { return w.opt.Prefix + "session:" + hashed(t) }

func (w *Web) nonce(c *fiber.Ctx) error {
	httpcache.Private(c)
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	n, err := randomHex(16)
	if err != nil {
		return err
	}
	ctx, cancel := w.ctx(c)
	defer cancel()
	if err := w.opt.Redis.Set(ctx, w.nonceKey(n), "1", NonceTTL).Err(); err != nil {
		return apierror.Unavailable("cannot issue a sign-in nonce now; try again shortly")
	}
	now := w.opt.Now().UTC().Truncate(time.Second)
	o := w.opt.Config.Origin
	return c.JSON(fiber.Map{"data": NonceView{Nonce: n, Domain: o.Host, URI: o.String(), Version: "1", ChainID: w.opt.Config.chainID(),
		Statement: Statement, IssuedAt: attestation.At(now), ExpirationTime: attestation.At(now.Add(NonceTTL))}})
}

func randomHex(n int) (string, error) {
	t, err := randomToken(n)
	if err != nil {
		return "", err
	}
	b, _ := base64.RawURLEncoding.DecodeString(t)
	return fmt.Sprintf("%x", b), nil
}

func refused(format string, args ...any) error {
	return apierror.New(http.StatusUnauthorized, apierror.CodeUnauthorized, format, args...)
}

func (w *Web) signIn(c *fiber.Ctx) error {
	httpcache.Private(c)
	text, m, sig, err := readSignIn(c)
	if err != nil {
		return err
	}
	now := w.opt.Now()
	if err := w.checkMessage(m, now); err != nil {
		return err
	}
	if err := VerifySignature(text, m.Address, sig); err != nil {
		return refused("%s", err.Error())
	}
	ctx, cancel := w.ctx(c)
	defer cancel()
	// The nonce is taken, not read: two requests with the same message
	// cannot both succeed.
	switch err := w.opt.Redis.GetDel(ctx, w.nonceKey(m.Nonce)).Err(); {
	case errors.Is(err, redis.Nil):
		return refused("the nonce was already used or has expired; sign in again")
	case err != nil:
		return apierror.Unavailable("cannot check the sign-in now; try again shortly")
	}
	acct, err := w.accountOf(c, ctx, m.Address)
	if err != nil {
		return err
	}
	token, err := randomToken(32)
	if err != nil {
		return err
	}
	csrf, err := randomToken(32)
	if err != nil {
		return err
	}
	expires := now.Add(w.opt.Config.SessionTTL).UTC().Truncate(time.Second)
	rec, _ := json.Marshal(sessionRecord{AccountID: acct.ID, Account: acct.Name, Wallet: m.Address, CSRF: csrf, Expires: expires.Unix()})
	if err := w.opt.Redis.Set(ctx, w.sessionKey(token), rec, w.opt.Config.SessionTTL).Err(); err != nil {
		return apierror.Unavailable("cannot start a session now; try again shortly")
	}
	c.Cookie(&fiber.Cookie{Name: CookieName, Value: token, Path: "/", Expires: expires, MaxAge: int(w.opt.Config.SessionTTL / time.Second),
		HTTPOnly: true, Secure: w.opt.Config.Origin.Secure(), SameSite: fiber.CookieSameSiteStrictMode})
	return c.JSON(fiber.Map{"data": SessionView{Account: acct.Name, Wallet: m.Address, CSRFToken: csrf, ExpiresAt: attestation.At(expires)}})
}

// readSignIn reads a sign-in request's JSON body: the signed message's
// text, parsed, and the signature.
func readSignIn(c *fiber.Ctx) (text string, m Message, sig []byte, err error) {
	if _, err := httpapi.QueryParams(c); err != nil {
		return "", Message{}, nil, err
	}
	body, err := httpapi.Body(c, maxSignInBody)
	if err != nil {
		return "", Message{}, nil, err
	}
	if err := httpapi.RequireJSON(c.Get(fiber.HeaderContentType), ""); err != nil {
		return "", Message{}, nil, err
	}
	var req struct {
		Message   *string `json:"message"`
		Signature *string `json:"signature"`
	}
	if err := jsonbody.Decode(body, &req); err != nil || req.Message == nil || req.Signature == nil {
		return "", Message{}, nil, jsonbody.Refusal(err, `the body must be {"message": "<the signed Sign-In-With-Solana text>", "signature": "<base64 of the 64-byte Ed25519 signature>"}`)
	}
	m, err = ParseMessage(*req.Message)
	if err != nil {
		return "", Message{}, nil, apierror.Invalid("message: %s", err.Error())
	}
	sig, err = base64.StdEncoding.DecodeString(*req.Signature)
	if err != nil || len(sig) != 64 {
		return "", Message{}, nil, apierror.Invalid("signature must be the 64-byte Ed25519 signature in standard base64")
	}
	return *req.Message, m, sig, nil
}

// checkMessage refuses a sign-in message that is not for this server and
// chain, is not valid at now, or names no nonce this server could have
// issued.
func (w *Web) checkMessage(m Message, now time.Time) error {
	// The domain is the configured origin's, never a request header's: a
	// signature made for another site cannot open a session here.
	if want := w.opt.Config.Origin.Host; m.Domain != want {
		return refused("the message is for %q, not for this server (%q): sign in from this site", excerpt.Of(m.Domain, 64), excerpt.Of(want, 64))
	}
	if u, err := url.Parse(m.URI); err != nil || u.Host != m.Domain || (u.Scheme != "https" && u.Scheme != "http") {
		return apierror.Invalid("message: URI must be an http(s) URL on %q", excerpt.Of(m.Domain, 64))
	}
	if m.Version != "1" {
		return apierror.Invalid("message: Version must be 1")
	}
	if want := w.opt.Config.chainID(); m.ChainID != want && m.ChainID != "solana:"+want {
		return refused("the message is for chain %q; this server signs in on %q", excerpt.Of(m.ChainID, 64), want)
	}
	switch {
	case m.IssuedAt.After(now.Add(ClockSkew)):
		return refused("the message was issued in the future (%s); check your clock", m.IssuedAt.UTC().Format(time.RFC3339))
	case !m.ExpirationTime.After(now):
		return refused("the message expired at %s; sign in again", m.ExpirationTime.UTC().Format(time.RFC3339))
	case !m.ExpirationTime.After(m.IssuedAt) || m.ExpirationTime.Sub(m.IssuedAt) > MaxMessageLifetime:
		return refused("the message must expire after it is issued and within %s of it", MaxMessageLifetime)
	}
	if !noncePattern.MatchString(m.Nonce) {
		return refused("unknown nonce: get one from GET /api/v1/auth/nonce")
	}
	return nil
}

// lookup reads the request's session: ok false when it carries no session
// cookie; an error (401, 503) when the cookie names no live session.
func (w *Web) lookup(c *fiber.Ctx) (rec sessionRecord, token string, ok bool, err error) {
	token = c.Cookies(CookieName)
	if token == "" {
		return rec, "", false, nil
	}
	if !tokenPattern.MatchString(token) {
		return rec, "", true, refused("the session cookie is not one this server set; sign in again")
	}
	token = strings.Clone(token) // Fiber reuses the buffer
	ctx, cancel := w.ctx(c)
	defer cancel()
	b, err := w.opt.Redis.Get(ctx, w.sessionKey(token)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return rec, "", true, refused("the session expired or was signed out; sign in again")
	case err != nil:
		return rec, "", true, apierror.Unavailable("cannot check the session now; try again shortly")
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.AccountID == 0 {
		return rec, "", true, fmt.Errorf("session record: %v", err)
	}
	return rec, token, true, nil
}

// signedIn is lookup for routes that need a session: no session is a 401.
func (w *Web) signedIn(c *fiber.Ctx) (sessionRecord, string, error) {
	rec, token, ok, err := w.lookup(c)
	if err == nil && !ok {
		err = refused("not signed in")
	}
	return rec, token, err
}

// checkCSRF refuses a state-changing call whose CSRF header is not the
// session's token.
func checkCSRF(c *fiber.Ctx, rec sessionRecord) error {
	switch c.Method() {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	got := c.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(rec.CSRF)) != 1 {
		return apierror.Forbidden("a signed-in session must send its CSRF token (csrfToken of the sign-in) in the %s header on every call that changes something", CSRFHeader)
	}
	return nil
}

// Principal authenticates the account routes by session (apikey.Sessions):
// the session's account, as an admin, with the CSRF check on every
// state-changing call.
func (w *Web) Principal(c *fiber.Ctx) (apikey.Principal, bool, error) {
	rec, _, ok, err := w.lookup(c)
	if !ok || err != nil {
		return apikey.Principal{}, ok, err
	}
	if err := checkCSRF(c, rec); err != nil {
		return apikey.Principal{}, true, err
	}
	return apikey.SessionPrincipal(rec.AccountID, rec.Account), true, nil
}

func (w *Web) session(c *fiber.Ctx) error {
	httpcache.Private(c)
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	rec, _, err := w.signedIn(c)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"data": SessionView{Account: rec.Account, Wallet: rec.Wallet, CSRFToken: rec.CSRF,
		ExpiresAt: attestation.At(time.Unix(rec.Expires, 0))}})
}

func (w *Web) signOut(c *fiber.Ctx) error {
	httpcache.Private(c)
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	rec, token, err := w.signedIn(c)
	if err != nil {
		return err
	}
	if err := checkCSRF(c, rec); err != nil {
		return err
	}
	ctx, cancel := w.ctx(c)
	defer cancel()
	if err := w.opt.Redis.Del(ctx, w.sessionKey(token)).Err(); err != nil {
		return apierror.Unavailable("cannot end the session now; try again shortly")
	}
	c.Cookie(&fiber.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0), HTTPOnly: true,
		Secure: w.opt.Config.Origin.Secure(), SameSite: fiber.CookieSameSiteStrictMode})
	return c.SendStatus(http.StatusNoContent)
}

// PaymentView is one x402 payment of the signed-in wallet.
type PaymentView struct {
	CreatedAt   attestation.Time  `json:"createdAt"`
	Route       string            `json:"route"`
	Amount      string            `json:"amount"`
	Asset       string            `json:"asset"`
	Network     string            `json:"network"`
	Status      string            `json:"status"`
	TxSignature *string           `json:"txSignature"`
	SettledAt   *attestation.Time `json:"settledAt"`
}

// payments lists the x402 payments the session's wallet made (the
// ledger's payer), newest first.
func (w *Web) payments(c *fiber.Ctx) error {
	httpcache.Private(c)
	q, err := httpapi.QueryParams(c, "limit")
	if err != nil {
		return err
	}
	v, present := q["limit"]
	limit, err := httpapi.ParseLimit(v, present, 50, 100)
	if err != nil {
		return err
	}
	rec, _, err := w.signedIn(c)
	if err != nil {
		return err
	}
	ps, err := w.opt.Store.ListPayments(c.UserContext(), store.PaymentFilter{Payer: rec.Wallet, Limit: limit})
	if err != nil {
		return httpapi.StoreError(err)
	}
	out := make([]PaymentView, len(ps))
	for i, p := range ps {
		out[i] = PaymentView{CreatedAt: attestation.At(p.CreatedAt), Route: p.Route, Amount: strconv.FormatUint(p.Amount, 10),
			Asset: p.Asset, Network: p.Network, Status: string(p.Status), SettledAt: attestation.OptTime(p.SettledAt)}
		if p.TxSignature != "" {
			sig := p.TxSignature
			out[i].TxSignature = &sig
		}
	}
	return c.JSON(fiber.Map{"data": out})
}
