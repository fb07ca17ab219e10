package webhook

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/webhook/signature"
	"golang.org/x/sync/singleflight"
)

// hookTTL bounds how long a worker uses a webhook's URL, state and secret
// after a change: PATCH and DELETE reach every worker within it.
const hookTTL = 5 * time.Second

// hook is what a sender needs of a webhook.
type hook struct {
	id     string
	found  bool // false: deleted
	url    string
	host   string // the URL's host, lower case: the per-host cap's key
	active bool
	// verified: its receiver answered the webhook.verify challenge, so its
	// requests share the verified per-host cap (else the unverified one).
	verified bool
	signer   *signature.Signer
	// rate is the subscriber's own deliveries-per-second cap (0: none).
	rate   int
	loaded time.Time
}

// hookCache loads webhooks from the store and opens their secrets.
type hookCache struct {
	st   *store.Store
	keys *keyring.Keyring
	now  func() time.Time
	mu   sync.Mutex
	m    map[string]*hook
	sf   singleflight.Group
}

func (c *hookCache) get(ctx context.Context, id string) (*hook, error) {
	c.mu.Lock()
	h, ok := c.m[id]
	c.mu.Unlock()
	if ok && c.now().Sub(h.loaded) < hookTTL {
		return h, nil
	}
	v, err, _ := c.sf.Do(id, func() (any, error) {
		h, err := c.load(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*hook{}
		}
		if len(c.m) > 100_000 {
			clear(c.m)
		}
		c.m[id] = h
		c.mu.Unlock()
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*hook), nil
}

func (c *hookCache) load(ctx context.Context, id string) (*hook, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h := &hook{id: id, loaded: c.now()}
	w, err := c.st.WebhookByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	if h.signer, err = signerOf(c.keys, w); err != nil {
		return nil, err
	}
	if w.RateLimit != nil {
		h.rate = int(*w.RateLimit)
	}
	h.found, h.url, h.active, h.verified = true, w.URL, w.Active, w.Verification == store.VerificationVerified
	h.host = hostOf(w.URL)
	return h, nil
}

// hostOf is the lower-case host of a webhook URL without the root's
// trailing dot ("" when it does not parse): example.com, EXAMPLE.com. and
// example.com:443 are one host for the cap.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// forget drops cached webhooks (deactivated by this worker).
func (c *hookCache) forget(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.m, id)
	}
}

// signerOf opens a webhook's sealed values and makes the signer of its
// scheme: v1 with the secret (and the previous one, which the signer
// stops using when the overlap ends), v1a with the Ed25519 key.
func signerOf(keys *keyring.Keyring, w store.Webhook) (*signature.Signer, error) {
	k := signature.Keys{V1: w.SignatureScheme != store.SchemeV1a}
	secret, err := keys.Open(w.SecretSealed, w.SecretKeyID, []byte(w.ID))
	if err != nil {
		return nil, fmt.Errorf("open the secret of webhook %s (sealed with key %q): %w", w.ID, w.SecretKeyID, err)
	}
	k.Secret = string(secret)
	if w.PreviousSecretSealed != nil && w.PreviousSecretUntil != nil {
		prev, err := keys.Open(w.PreviousSecretSealed, w.SecretKeyID, []byte(w.ID))
		if err != nil {
			return nil, fmt.Errorf("open the previous secret of webhook %s: %w", w.ID, err)
		}
		k.Previous, k.PreviousUntil = string(prev), *w.PreviousSecretUntil
	}
	if w.SignatureScheme != store.SchemeV1 && w.Ed25519Sealed != nil {
		seed, err := keys.Open(w.Ed25519Sealed, w.SecretKeyID, Ed25519AAD(w.ID))
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("open the Ed25519 key of webhook %s: %v", w.ID, err)
		}
		k.Ed25519 = ed25519.NewKeyFromSeed(seed)
	}
	s, err := signature.NewSignerWith(k)
	if err != nil {
		return nil, fmt.Errorf("signing keys of webhook %s: %w", w.ID, err)
	}
	return s, nil
}

// forgetAll drops every cached webhook.
func (c *hookCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
