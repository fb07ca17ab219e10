package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/web"
)

// TestSignInRefusals: a sign-in is refused, in the envelope, when its
// nonce was used or never issued, its message expired, lives too long or
// was issued in the future, names another domain, or carries another
// key's signature; malformed bodies are 4xx, never 5xx.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	w, other := newWallet(t), newWallet(t)

	type tc struct {
		name   string
		status int
		code   string
		msg    func() (text, sig string)
		want   string // in the message
	}
	signed := func(edit func(*web.Message)) func() (string, string) {
		return func() (string, string) {
			m := h.message(w, h.nonce(t))
			edit(&m)
			return m.String(), w.sign(m.String())
		}
	}
	// One good sign-in, replayed.
	first := h.message(w, h.nonce(t)).String()
	firstSig := w.sign(first)
	if r := h.signIn(t, first, firstSig); r.Status != http.StatusOK {
		t.Fatalf("first sign-in: %d %s", r.Status, r.Body)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, c := range []tc{
		{"replayed", 401, apierror.CodeUnauthorized, func() (string, string) { return first, firstSig }, "already used"},
		{"nonce never issued", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) { m.Nonce = strings.Repeat("ab", 16) }), "already used or has expired"},
		{"nonce not ours", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) { m.Nonce = "abcDEF12" }), "unknown nonce"},
		{"expired", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) {
			m.IssuedAt, m.ExpirationTime = now.Add(-8*time.Minute), now.Add(-time.Second)
		}), "expired"},
		{"issued in the future", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) {
			m.IssuedAt, m.ExpirationTime = now.Add(3*time.Minute), now.Add(6*time.Minute)
		}), "future"},
		{"lives too long", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) { m.ExpirationTime = m.IssuedAt.Add(time.Hour) }), "within"},
		{"wrong domain", 401, apierror.CodeUnauthorized, signed(func(m *web.Message) { m.Domain, m.URI = "evil.example", "https://evil.example" }), "not for this server"},
		{"uri on another host", 400, apierror.CodeInvalidParam, signed(func(m *web.Message) { m.URI = "https://evil.example" }), "URI"},
		{"wrong signature", 401, apierror.CodeUnauthorized, func() (string, string) {
			m := h.message(w, h.nonce(t)).String()
			return m, other.sign(m)
		}, "signature"},
		{"signed text differs", 401, apierror.CodeUnauthorized, func() (string, string) {
			m := h.message(w, h.nonce(t))
			sig := w.sign(m.String())
			m.Statement = "Something else."
			return m.String(), sig
		}, "signature"},
		{"not canonical", 400, apierror.CodeInvalidParam, func() (string, string) {
			m := h.message(w, h.nonce(t)).String() + "\n"
			return m, w.sign(m)
		}, "message"},
		{"not a message", 400, apierror.CodeInvalidParam, func() (string, string) { return "hello", w.sign("hello") }, "message"},
		{"signature not base64", 400, apierror.CodeInvalidParam, func() (string, string) { return h.message(w, h.nonce(t)).String(), "%%%" }, "signature"},
		{"short signature", 400, apierror.CodeInvalidParam, func() (string, string) { return h.message(w, h.nonce(t)).String(), "AAAA" }, "signature"},
	} {
		text, sig := c.msg()
		r := h.signIn(t, text, sig)
		if r.Status != c.status || r.ErrorCode() != c.code || !strings.Contains(r.ErrorMessage(), c.want) {
			t.Errorf("%s: %d %s, want %d %s with %q", c.name, r.Status, r.Body, c.status, c.code, c.want)
		}
		if r.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s: a refused sign-in set a cookie", c.name)
		}
	}
	// Bodies.
	for _, c := range []struct {
		body, ctype string
		status      int
	}{
		{`{}`, "application/json", 400},
		{`{"message": 1, "signature": "x"}`, "application/json", 400},
		{`{"message": "x", "signature": "x", "extra": 1}`, "application/json", 400},
		{`[]`, "application/json", 400},
		{`message=x`, "application/x-www-form-urlencoded", 415},
		{`{"message":"` + strings.Repeat("a", 9000) + `","signature":""}`, "application/json", 413},
	} {
		r := h.node.Do(t, http.MethodPost, "/auth/signin", []byte(c.body), map[string]string{"Content-Type": c.ctype})
		if r.Status != c.status {
			t.Errorf("body %.40q: %d %s, want %d", c.body, r.Status, r.Body, c.status)
		}
	}
	// The session and signout routes without a session.
	if r := h.node.Get(t, "/auth/session"); r.Status != 401 {
		t.Errorf("session without a cookie: %d", r.Status)
	}
	if r := h.do(t, session{cookie: "garbage"}, false, http.MethodGet, "/keys", nil); r.Status != 401 {
		t.Errorf("keys with a garbage cookie: %d", r.Status)
	}
	if r := h.do(t, session{cookie: strings.Repeat("A", 43)}, false, http.MethodGet, "/keys", nil); r.Status != 401 || !strings.Contains(r.ErrorMessage(), "expired or was signed out") {
		t.Errorf("keys with an unknown session: %d %s", r.Status, r.Body)
	}
}

// TestSessionActsForItsAccount: a session manages its own account's keys
// and webhooks as an admin, needs its CSRF token for every change, never
// reaches another account's, and ends on sign-out on the server.
func TestSessionActsForItsAccount(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{agents: 1, attestations: 20})
	w := newWallet(t)
	s := h.login(t, w)
	if s.account != store.WalletAccountName(w.address) {
		t.Errorf("account %q", s.account)
	}
	// The cookie's attributes.
	msg := h.message(w, h.nonce(t)).String()
	r := h.signIn(t, msg, w.sign(msg))
	sc := r.Header.Get("Set-Cookie")
	for _, want := range []string{"httponly", "samesite=strict", "path=/", "max-age=3600"} {
		if !strings.Contains(strings.ToLower(sc), want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("Set-Cookie %q: Secure with an http origin would stop the console working over http", sc)
	}
	if r := h.do(t, s, false, http.MethodGet, "/auth/session", nil); r.Status != 200 || !strings.Contains(string(r.Body), s.csrf) {
		t.Errorf("session: %d %s", r.Status, r.Body)
	}

	// Reads need no token; changes do.
	if r := h.do(t, s, false, http.MethodGet, "/keys", nil); r.Status != 200 {
		t.Fatalf("list keys: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/keys"}, {http.MethodDelete, "/keys/11111111"}, {http.MethodPost, "/webhooks"},
		{http.MethodPatch, "/webhooks/wh_000000000000000000000000"}, {http.MethodDelete, "/webhooks/wh_000000000000000000000000"},
		{http.MethodPost, "/webhooks/wh_000000000000000000000000/test"}, {http.MethodPost, "/webhooks/wh_000000000000000000000000/verify"},
		{http.MethodPost, "/auth/signout"},
	} {
		r := h.do(t, s, false, c.method, c.path, map[string]any{"label": "x"})
		if r.Status != http.StatusForbidden || !strings.Contains(r.ErrorMessage(), web.CSRFHeader) {
			t.Errorf("%s %s without the CSRF token: %d %s", c.method, c.path, r.Status, r.Body)
		}
		bad := s
		bad.csrf = strings.Repeat("x", len(s.csrf))
		if r := h.do(t, bad, true, c.method, c.path, map[string]any{"label": "x"}); r.Status != http.StatusForbidden {
			t.Errorf("%s %s with a wrong CSRF token: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	// With it: an admin key of the wallet's account.
	r = h.do(t, s, true, http.MethodPost, "/keys", map[string]any{"label": "console", "role": "admin"})
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"role":"admin"`) {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	var created struct {
		Data struct{ Key, Prefix, Account string }
	}
	r.JSON(t, &created)
	if created.Data.Account != s.account {
		t.Errorf("key of account %q", created.Data.Account)
	}
	if r := h.node.Do(t, http.MethodGet, "/keys", nil, map[string]string{"x-api-key": created.Data.Key}); r.Status != 200 {
		t.Errorf("the console's key does not work: %d", r.Status)
	}
	wh := h.do(t, s, true, http.MethodPost, "/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"attestation.created"}})
	if wh.Status != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", wh.Status, wh.Body)
	}
	var hook struct{ Data struct{ ID string } }
	wh.JSON(t, &hook)

	// Another account's key and webhook are 404 to this session, and this
	// account's are 404 to another session.
	ctx := context.Background()
	acc, _, err := h.env.Store.EnsureAccount(ctx, "someone-else")
	testenv.Must(t, err, "account")
	theirs, err := h.keys.Create(ctx, acc.ID, "theirs")
	testenv.Must(t, err, "their key")
	tw := h.node.Do(t, http.MethodPost, "/webhooks", []byte(`{"url":"http://127.0.0.1:9/x","events":["attestation.created"]}`),
		map[string]string{"x-api-key": theirs.Secret})
	var theirHook struct{ Data struct{ ID string } }
	tw.JSON(t, &theirHook)
	for _, c := range []struct{ method, path string }{
		{http.MethodDelete, "/keys/" + theirs.Key.Prefix}, {http.MethodGet, "/webhooks/" + theirHook.Data.ID},
		{http.MethodPatch, "/webhooks/" + theirHook.Data.ID}, {http.MethodDelete, "/webhooks/" + theirHook.Data.ID},
		{http.MethodGet, "/webhooks/" + theirHook.Data.ID + "/deliveries"}, {http.MethodPost, "/webhooks/" + theirHook.Data.ID + "/test"},
		{http.MethodPost, "/webhooks/" + theirHook.Data.ID + "/verify"},
	} {
		var body any
		if c.method == http.MethodPatch {
			body = map[string]any{"active": false}
		}
		if r := h.do(t, s, true, c.method, c.path, body); r.Status != http.StatusNotFound {
			t.Errorf("%s %s of another account: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	s2 := h.login(t, newWallet(t))
	if r := h.do(t, s2, true, http.MethodDelete, "/keys/"+created.Data.Prefix, nil); r.Status != http.StatusNotFound {
		t.Errorf("another wallet revokes this one's key: %d", r.Status)
	}
	if r := h.do(t, s2, true, http.MethodDelete, "/webhooks/"+hook.Data.ID, nil); r.Status != http.StatusNotFound {
		t.Errorf("another wallet deletes this one's webhook: %d", r.Status)
	}
	// A key wins over a session: the other account's key reads its own keys.
	r = h.node.Do(t, http.MethodGet, "/keys", nil, map[string]string{"x-api-key": theirs.Secret, "Cookie": web.CookieName + "=" + s.cookie})
	if r.Status != 200 || !strings.Contains(string(r.Body), theirs.Key.Prefix) || strings.Contains(string(r.Body), created.Data.Prefix) {
		t.Errorf("key and cookie: %d %s", r.Status, r.Body)
	}
	// Premium routes stay behind a key (or a payment): a session alone is 401.
	if r := h.do(t, s, false, http.MethodGet, "/premium/full-history/"+h.env.Seeded.Agents[0].PDA.String(), nil); r.Status != http.StatusUnauthorized {
		t.Errorf("a premium route with a session only: %d %s", r.Status, r.Body)
	}
	if r := h.node.Do(t, http.MethodGet, "/premium/full-history/"+h.env.Seeded.Agents[0].PDA.String(), nil, map[string]string{"x-api-key": created.Data.Key}); r.Status != http.StatusOK {
		t.Errorf("a premium route with the console's key: %d %s", r.Status, r.Body)
	}
	// Sign-out ends the session on the server: the cookie is refused after.
	if r := h.do(t, s, true, http.MethodPost, "/auth/signout", nil); r.Status != http.StatusNoContent || !strings.Contains(strings.ToLower(r.Header.Get("Set-Cookie")), "expires=thu, 01 jan 1970") {
		t.Errorf("sign out: %d %v", r.Status, r.Header)
	}
	if r := h.do(t, s, false, http.MethodGet, "/keys", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("keys after sign-out: %d", r.Status)
	}
}

// TestLinkedAccount: a wallet linked to an existing account signs in to
// that account, and one wallet links to one account only.
func TestLinkedAccount(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	ctx := context.Background()
	acc, _, err := h.env.Store.EnsureAccount(ctx, "cli-account")
	testenv.Must(t, err, "account")
	w := newWallet(t)
	if _, err := h.env.Store.LinkWallet(ctx, "cli-account", w.address); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.Store.LinkWallet(ctx, "missing", w.address); err != store.ErrNotFound {
		t.Errorf("link to a missing account: %v", err)
	}
	h.env.Store.EnsureAccount(ctx, "another")
	if _, err := h.env.Store.LinkWallet(ctx, "another", w.address); err != store.ErrWalletTaken {
		t.Errorf("link a wallet twice: %v", err)
	}
	s := h.login(t, w)
	if s.account != acc.Name {
		t.Errorf("signed in to %q, want %q", s.account, acc.Name)
	}
}

// TestSessionPayments: the console lists the x402 payments whose payer is
// the signed-in wallet, and no one else's.
func TestSessionPayments(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	w, other := newWallet(t), newWallet(t)
	ctx := context.Background()
	const usdc = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	for i, payer := range []string{w.address, other.address, w.address} {
		p := store.Payment{Network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", Asset: usdc, PayTo: other.address, Payer: payer,
			Amount: uint64(10_000 * (i + 1)), Route: "/premium/full-history", Node: "n1"}
		p.MessageHash[0], p.MessageHash[1] = byte(i+1), 9
		id, err := h.env.Store.ClaimPayment(ctx, p)
		testenv.Must(t, err, "claim payment")
		if i == 0 {
			testenv.Must(t, h.env.Store.FinishPayment(ctx, id, "settled", strings.Repeat("5", 88), ""), "settle")
		}
	}
	if r := h.node.Get(t, "/auth/payments"); r.Status != http.StatusUnauthorized {
		t.Errorf("payments without a session: %d", r.Status)
	}
	s := h.login(t, w)
	r := h.do(t, s, false, http.MethodGet, "/auth/payments", nil)
	var out struct{ Data []web.PaymentView }
	r.JSON(t, &out)
	if r.Status != 200 || len(out.Data) != 2 || out.Data[0].Amount != "30000" || out.Data[1].Amount != "10000" ||
		out.Data[1].Status != "settled" || out.Data[1].TxSignature == nil || out.Data[0].TxSignature != nil {
		t.Errorf("payments: %d %s", r.Status, r.Body)
	}
	if r := h.do(t, s, false, http.MethodGet, "/auth/payments?limit=1", nil); !strings.Contains(string(r.Body), `"30000"`) || strings.Contains(string(r.Body), `"10000"`) {
		t.Errorf("limit=1: %s", r.Body)
	}
	if r := h.do(t, s, false, http.MethodGet, "/auth/payments?payer="+other.address, nil); r.Status != http.StatusBadRequest {
		t.Errorf("an unknown parameter: %d", r.Status)
	}
}
