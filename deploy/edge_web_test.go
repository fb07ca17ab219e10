package deploy_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/web"
	"github.com/gofiber/fiber/v2"
	"github.com/mr-tron/base58"
)

// publicHost is the host of the test fleet's origin (ATTESTD_PUBLIC_URL).
const publicHost = "attestd.example.com"

// TestEdgeServesTheConsole: through deploy/nginx.conf the page at / and
// its assets come from the nodes (not nginx's welcome page), the nodes see
// the public Host, and a wallet signs in (Sign-In-With-Solana with a
// generated Ed25519 key) and uses its session, all through the edge.
func TestEdgeServesTheConsole(t *testing.T) {
	t.Parallel()
	origin, err := config.ParseOrigin("https://" + publicHost)
	testenv.Must(t, err, "origin")
	var mu sync.Mutex
	hosts := map[string]int{}
	f := newFleet(t, fleetOptions{policy: long,
		middleware: func(*apptest.Env) []fiber.Handler {
			return []fiber.Handler{func(c *fiber.Ctx) error {
				mu.Lock()
				hosts[string(c.Request().Header.Host())]++
				mu.Unlock()
				return c.Next()
			}}
		},
		routes: func(t *testing.T, env *apptest.Env, api *app.API, deps app.Deps) {
			w, err := web.New(web.Deps{Store: deps.Store, Redis: apptest.NewRedis(t, env.RedisURL), Prefix: env.Prefix + "web:",
				Config: web.Config{Origin: origin, SessionTTL: time.Hour}, Logger: deps.Logger})
			testenv.Must(t, err, "web")
			w.Routes(api)
		},
	})
	b := &browser{t: t, f: f}

	res, body := b.do(http.MethodGet, "/", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "<title>attestd") ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET / through the edge: %d %q %.200s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	res, body = b.do(http.MethodGet, "/assets/app.js", nil)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || len(body) == 0 {
		t.Fatalf("GET /assets/app.js through the edge: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}

	// Sign in as the console does.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	testenv.Must(t, err, "wallet")
	address := base58.Encode(pub)
	res, body = b.do(http.MethodGet, "/api/v1/auth/nonce", nil)
	var nonce struct{ Data web.NonceView }
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &nonce) != nil {
		t.Fatalf("nonce: %d %s", res.StatusCode, body)
	}
	n := nonce.Data
	if n.Domain != publicHost || n.URI != "https://"+publicHost {
		t.Fatalf("nonce names %q %q, want the public origin", n.Domain, n.URI)
	}
	now := time.Now().UTC().Truncate(time.Second)
	msg := web.Message{Domain: n.Domain, Address: address, Statement: n.Statement, URI: n.URI, Version: n.Version, ChainID: n.ChainID,
		Nonce: n.Nonce, IssuedAt: now, ExpirationTime: now.Add(5 * time.Minute)}.String()
	req, _ := json.Marshal(map[string]string{"message": msg, "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(msg)))})
	res, body = b.do(http.MethodPost, "/api/v1/auth/signin", req)
	var session struct{ Data web.SessionView }
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &session) != nil || session.Data.Wallet != address {
		t.Fatalf("sign in through the edge: %d %s", res.StatusCode, body)
	}
	for _, c := range res.Cookies() {
		if c.Name == web.CookieName {
			b.cookie = c.Value
			if !c.Secure {
				t.Errorf("session cookie not Secure behind an https origin: %v", res.Header["Set-Cookie"])
			}
		}
	}
	if b.cookie == "" {
		t.Fatalf("no session cookie: %v", res.Header)
	}
	for i := 0; i < 2; i++ { // never one client's answer for another
		res, body = b.do(http.MethodGet, "/api/v1/auth/session", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), address) || res.Header.Get("X-Cache-Status") == "HIT" {
			t.Fatalf("session through the edge: %d %q %s", res.StatusCode, res.Header.Get("X-Cache-Status"), body)
		}
	}
	b.cookie = ""
	if res, body = b.do(http.MethodGet, "/api/v1/auth/session", nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("session without the cookie through the edge: %d %s", res.StatusCode, body)
	}

	mu.Lock()
	defer mu.Unlock()
	for h := range hosts {
		if h != publicHost {
			t.Errorf("a node saw Host %q through the edge, want %q (all: %v)", h, publicHost, hosts)
		}
	}
}

// browser is a client of the edge that sends the public Host and its
// session cookie.
type browser struct {
	t      *testing.T
	f      *fleet
	cookie string
}

func (b *browser) do(method, path string, body []byte) (*http.Response, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, b.f.edge.URL+path, rd)
	testenv.Must(b.t, err, "request")
	req.Host = publicHost
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.cookie != "" {
		req.Header.Set("Cookie", web.CookieName+"="+b.cookie)
	}
	res, err := client.Do(req)
	testenv.Must(b.t, err, "%s %s through the edge", method, path)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	testenv.Must(b.t, err, "read")
	return res, out
}
