package web_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/web"
	"github.com/attestd/attestd/ratelimit"
)

// TestSignInRelayRefused: an attacker's site shows a sign-in for its own
// domain with a nonce fetched from us and relays the victim's signature
// with Host: evil.example. The domain is the configured origin's, never
// the request's Host: 401, and no session.
func TestSignInRelayRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	victim := newWallet(t)
	for _, hdr := range []map[string]string{
		{"Host": "evil.example"},
		{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
		{"Host": "evil.example", "X-Forwarded-Host": "evil.example"},
	} {
		n := h.nonce(t)
		m := h.message(victim, n)
		m.Domain, m.URI = "evil.example", "https://evil.example"
		text := m.String()
		r := h.signIn(t, text, victim.sign(text), hdr)
		if r.Status != http.StatusUnauthorized || r.ErrorCode() != apierror.CodeUnauthorized || r.Header.Get("Set-Cookie") != "" {
			t.Errorf("relayed with %v: %d %s %q, want 401 and no cookie", hdr, r.Status, r.Body, r.Header.Get("Set-Cookie"))
		}
	}
	// The nonce says the origin, whatever Host the request sent.
	r := h.node.Do(t, http.MethodGet, "/auth/nonce", nil, map[string]string{"Host": "evil.example", "X-Forwarded-Host": "evil.example"})
	var out struct{ Data web.NonceView }
	r.JSON(t, &out)
	if out.Data.Domain != "console.test" || out.Data.URI != "http://console.test" {
		t.Errorf("nonce with Host evil.example: domain %q uri %q", out.Data.Domain, out.Data.URI)
	}
}

// TestSessionCookieSecure: with an https origin the cookie is Secure even
// though the request (a proxy's) comes over plain http on loopback; sign
// out clears it alike.
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{origin: "https://console.example"})
	w := newWallet(t)
	n := h.nonce(t)
	if n.Domain != "console.example" || n.URI != "https://console.example" {
		t.Fatalf("nonce: domain %q uri %q", n.Domain, n.URI)
	}
	msg := h.message(w, n).String()
	r := h.signIn(t, msg, w.sign(msg), map[string]string{"Host": "127.0.0.1"})
	if r.Status != http.StatusOK {
		t.Fatalf("sign in: %d %s", r.Status, r.Body)
	}
	if sc := r.Header.Get("Set-Cookie"); !strings.Contains(sc, "; secure") && !strings.Contains(sc, "; Secure") {
		t.Errorf("Set-Cookie %q: want Secure with an https origin", sc)
	}
	s := h.login(t, w)
	r = h.do(t, s, true, http.MethodPost, "/auth/signout", nil)
	if sc := r.Header.Get("Set-Cookie"); r.Status != http.StatusNoContent || !strings.Contains(strings.ToLower(sc), "; secure") {
		t.Errorf("sign out: %d Set-Cookie %q: want Secure", r.Status, sc)
	}
}

// TestSignInChainID: the message's Chain ID must be the node's network.
func TestSignInChainID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	w := newWallet(t)
	for _, c := range []struct {
		chain  string
		status int
	}{{"devnet", 401}, {"solana:devnet", 401}, {"testnet", 401}, {"localnet", 401}, {"MAINNET", 401}, {"mainnet", 200}, {"solana:mainnet", 200}} {
		n := h.nonce(t)
		if n.ChainID != "mainnet" {
			t.Fatalf("nonce chain %q", n.ChainID)
		}
		m := h.message(w, n)
		m.ChainID = c.chain
		r := h.signIn(t, m.String(), w.sign(m.String()))
		if r.Status != c.status || c.status == 401 && !strings.Contains(r.ErrorMessage(), "chain") {
			t.Errorf("Chain ID %q: %d %s, want %d", c.chain, r.Status, r.Body, c.status)
		}
	}
	d := newHarness(t, harnessOpt{chainID: "devnet"})
	n := d.nonce(t)
	if n.ChainID != "devnet" {
		t.Fatalf("devnet node's nonce chain %q", n.ChainID)
	}
	m := d.message(w, n)
	m.ChainID = "mainnet"
	if r := d.signIn(t, m.String(), w.sign(m.String())); r.Status != http.StatusUnauthorized {
		t.Errorf("mainnet message on a devnet node: %d %s", r.Status, r.Body)
	}
}

// TestNewAccountsPerIP: one client IP makes at most N accounts an hour
// by signing in; the next new wallet is 429 with Retry-After, while
// wallets that have an account still sign in.
func TestNewAccountsPerIP(t *testing.T) {
	t.Parallel()
	const limit = 3
	h := newHarness(t, harnessOpt{newAccounts: limit})
	var first wallet
	for i := 0; i < limit; i++ {
		w := newWallet(t)
		if i == 0 {
			first = w
		}
		h.login(t, w)
	}
	extra := newWallet(t)
	msg := h.message(extra, h.nonce(t)).String()
	r := h.signIn(t, msg, extra.sign(msg))
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != http.StatusTooManyRequests || r.ErrorCode() != apierror.CodeRateLimited || ra < 1 || ra > 3600 {
		t.Fatalf("account %d from one IP: %d %s Retry-After %q, want 429 RATE_LIMITED", limit+1, r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if r.Header.Get("Set-Cookie") != "" {
		t.Errorf("a refused sign-in set a cookie")
	}
	if s := h.login(t, first); s.account == "" {
		t.Error("an existing wallet could not sign in")
	}
	// A refusal takes no allowance: still refused, still the existing one signs in.
	msg = h.message(extra, h.nonce(t)).String()
	if r := h.signIn(t, msg, extra.sign(msg)); r.Status != http.StatusTooManyRequests {
		t.Errorf("again: %d %s", r.Status, r.Body)
	}
	h.login(t, first)
}

// TestConsoleOffWithoutOrigin: without a public origin the pages and the
// sign-in routes answer 503 naming ATTESTD_PUBLIC_URL.
func TestConsoleOffWithoutOrigin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{origin: "-"})
	for _, path := range []string{"/auth/nonce", "/auth/session"} {
		r := h.node.Get(t, path)
		if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.ErrorMessage(), "ATTESTD_PUBLIC_URL") {
			t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	res, err := http.Get(h.node.Root + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /: %d", res.StatusCode)
	}
}

// TestNewAccountsPerIPSpellings: behind a trusted proxy, an IPv4 client
// and its IPv4-mapped IPv6 spellings share one allowance, as do the
// addresses of one IPv6 /64; another /64 has its own.
func TestNewAccountsPerIPSpellings(t *testing.T) {
	t.Parallel()
	res, err := ratelimit.NewIPResolver([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, "")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpt{newAccounts: 2, resolver: res})
	for _, c := range []struct {
		client string
		want   int
	}{
		{"1.2.3.4", http.StatusOK}, {"::ffff:1.2.3.4", http.StatusOK}, {"::ffff:102:304", http.StatusTooManyRequests},
		{"2001:db8::1", http.StatusOK}, {"2001:db8::ffff:2", http.StatusOK}, {"2001:DB8::3", http.StatusTooManyRequests},
		{"2001:db8:0:1::1", http.StatusOK},
	} {
		w := newWallet(t)
		msg := h.message(w, h.nonce(t)).String()
		if r := h.signIn(t, msg, w.sign(msg), map[string]string{"X-Forwarded-For": c.client}); r.Status != c.want {
			t.Errorf("new account from %s: %d %s, want %d", c.client, r.Status, r.Body, c.want)
		}
	}
}
