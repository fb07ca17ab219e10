package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/webhook/keyring"
	"github.com/attestd/attestd/webhook/signature"
	"golang.org/x/sync/singleflight"
)

// hookTTL bounds how long a worker uses a webhook's URL, state and secret
// after a change: PATCH and DELETE reach every worker within it.
const hookTTL = 5 * time.Second

// pendingTTL is how long a webhook whose verification is pending is used:
// its held deliveries notice the verification within it.
const pendingTTL = 250 * time.Millisecond

// hook is what a sender needs of a webhook.
type hook struct {
	id     string
	found  bool // false: deleted
	url    string
	host   string // the URL's host, lower case: the per-host cap's key
	active bool
	// verification is the endpoint verification's state (store.Verification*).
	verification string
	signer       *signature.Signer
	loaded       time.Time
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
	if ok && c.now().Sub(h.loaded) < h.ttl() {
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
	secret, err := c.keys.Open(w.SecretSealed, w.SecretKeyID, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("open the secret of webhook %s (sealed with key %q): %w", id, w.SecretKeyID, err)
	}
	if h.signer, err = signature.NewSigner(string(secret)); err != nil {
		return nil, fmt.Errorf("secret of webhook %s: %w", id, err)
	}
	h.found, h.url, h.active, h.verification = true, w.URL, w.Active, w.Verification
	h.host = hostOf(w.URL)
	return h, nil
}

// ttl is how long h is used before it is read again.
func (h *hook) ttl() time.Duration {
	if h.found && h.verification == store.VerificationPending {
		return pendingTTL
	}
	return hookTTL
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
