package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/gofiber/fiber/v2"
)

type listBody struct {
	Data       []attestation.Attestation `json:"data"`
	Pagination httpapi.Pagination        `json:"pagination"`
}

type dataBody struct {
	Data any `json:"data"`
}

// cacheable says how a public answer may be cached: its Cache-Control, and
// its surrogate keys (a general key, and prefix+id when id is set).
type cacheable struct {
	control []byte // one of API.control's
	general string
	prefix  string
	id      string
}

// sendCacheable writes a public answer with its caching headers, or 304
// Not Modified when the request's If-None-Match names the representation
// it would get. The representation (identity or gzip) is chosen first,
// from Accept-Encoding, and its own strong tag, made when the value was
// cached, is the ETag; no body is built or hashed here. Every answer of
// these routes says Vary: Accept-Encoding, small ones included: whether an
// answer is compressed depends on its size, which a cache cannot know
// beforehand. The 304 carries the headers its 200 would (RFC 9110 15.4.5).
func sendCacheable(c *fiber.Ctx, v cache.Value, how cacheable) error {
	gz := v.Gzip != nil && httpapi.AcceptsGzip(c)
	etag := v.ETag
	if gz {
		etag = v.GzipETag
	}
	h := &c.Response().Header
	h.SetCanonical(headerCacheControl, how.control)
	h.SetCanonical(headerVary, acceptEncoding)
	if len(etag) > 0 {
		h.SetCanonical(headerETag, etag)
	}
	httpcache.SetKeys(c, how.general, how.prefix, how.id)
	if len(etag) > 0 && httpcache.NoneMatch(c.Request().Header.PeekAll(fiber.HeaderIfNoneMatch), etag) {
		c.Status(http.StatusNotModified)
		return nil
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	if gz {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(v.Gzip)
	}
	return c.Send(v.JSON)
}

func marshal(v any) ([]byte, error) {
	b, err := httpapi.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b, nil
}

// cached answers a public read from the cache with the caching headers of
// how (see sendCacheable): from this node's memory when it holds key, or
// else loaded (Redis, then load). key is the request's cache key.
func (a *API) cached(c *fiber.Ctx, key []byte, how cacheable, load func(ctx context.Context) (any, bool, error)) error {
	v, ok := a.deps.Cache.Peek(key)
	if !ok {
		var err error
		if v, err = a.load(c, string(key), load); err != nil {
			return err
		}
	}
	return sendCacheable(c, v, how)
}

// load gets key's value through the cache, loading it with load on a
// miss: load returns the answer's body and whether it can never change.
func (a *API) load(c *fiber.Ctx, key string, load func(ctx context.Context) (any, bool, error)) (cache.Value, error) {
	v, _, err := a.deps.Cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		body, immutable, err := load(ctx)
		if err != nil {
			return nil, false, httpapi.LoadError(err)
		}
		b, err := marshal(body)
		return b, immutable, err
	})
	return v, err
}

// addressRead is a public read of one record named by the address in the
// path: an attestation, an agent, an agent's statistics.
type addressRead struct {
	param string // the path parameter
	kind  string // the cache key's kind
	// caching says how the answer about id may be cached (immutable: the
	// value can never change).
	caching func(a *API, id string, immutable bool) cacheable
	// load loads the answer's body about id, and whether it can never
	// change; store.ErrNotFound for an unknown id.
	load     func(a *API, ctx context.Context, id string) (any, bool, error)
	notFound func(id string) error
}

// readAddress answers r. The cache key is r.kind and the address as the
// path spells it. When this node's memory holds that key the answer is
// sent without decoding the address: only answers about addresses that
// passed validation are ever cached, and base58 spells each address one
// way, so holding the key vouches for the text. Otherwise the address is
// validated (400 when it is not one) and the answer loaded, under the
// same key.
func (a *API) readAddress(c *fiber.Ctx, r *addressRead) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	raw := c.Params(r.param)                   // Fiber's buffer: used within this request only
	if len(raw) <= attestation.MaxAddressLen { // a longer text is a 400 below
		if v, ok := a.deps.Cache.Peek(cache.NewKey(r.kind).String(raw).Bytes()); ok {
			return sendCacheable(c, v, r.caching(a, raw, v.Immutable))
		}
	}
	id, err := httpapi.ParseAddress(r.param, raw) // a copy, safe to keep
	if err != nil {
		return err
	}
	v, err := a.load(c, cache.NewKey(r.kind).String(id).Key(), func(ctx context.Context) (any, bool, error) {
		return r.load(a, ctx, id)
	})
	if errors.Is(err, cache.ErrNotFound) {
		return r.notFound(id)
	}
	if err != nil {
		return err
	}
	return sendCacheable(c, v, r.caching(a, id, v.Immutable))
}

func (a *API) stats(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	how := cacheable{control: a.control.index, general: httpcache.KeyStats}
	return a.cached(c, statsKey, how, func(ctx context.Context) (any, bool, error) {
		st, err := a.deps.Store.Stats(ctx, a.deps.Now())
		return st, false, err
	})
}

func (a *API) listAttestations(c *fiber.Ctx) error {
	q, err := parseListQuery(c)
	if err != nil {
		return err
	}
	how := cacheable{control: a.control.index, general: httpcache.KeyLists, prefix: httpcache.PrefixAgent, id: q.filter.AgentPDA}
	return a.cached(c, q.cacheKey(cache.NewKey("list")).Bytes(), how, func(ctx context.Context) (any, bool, error) {
		page, err := a.deps.Store.ListAttestations(ctx, q.filter)
		if err != nil {
			return nil, false, err
		}
		body := listBody{Data: page.Items, Pagination: httpapi.Pagination{Limit: q.filter.Limit, Offset: q.filter.Offset, Total: page.Total}}
		if body.Data == nil {
			body.Data = []attestation.Attestation{}
		}
		if page.Next != nil {
			body.Pagination.NextCursor = httpapi.EncodeCursor(page.Next)
		}
		return body, false, nil
	})
}

// statsKey is the cache key of GET /stats, which takes no parameters.
var statsKey = cache.NewKey("stats").Bytes()

func (a *API) getAttestation(c *fiber.Ctx) error { return a.readAddress(c, &attestationRead) }

var attestationRead = addressRead{
	param: "id",
	kind:  "attestation",
	// Confirmed, a fork can still drop it: short. Finalized, it never
	// changes: immutable.
	caching: func(a *API, id string, immutable bool) cacheable {
		if immutable {
			return cacheable{control: a.control.finalized, prefix: httpcache.PrefixAttestation, id: id}
		}
		return cacheable{control: a.control.confirmed, general: httpcache.KeyConfirmed, prefix: httpcache.PrefixAttestation, id: id}
	},
	load: func(a *API, ctx context.Context, id string) (any, bool, error) {
		at, err := a.deps.Store.GetAttestation(ctx, id)
		return dataBody{Data: at}, at.Commitment == attestation.Finalized, err
	},
	notFound: func(id string) error {
		return apierror.NotFound(apierror.CodeAttestationNotFound, "no attestation with pda %s", id)
	},
}

func (a *API) getAgent(c *fiber.Ctx) error { return a.readAddress(c, &agentRead) }

var agentRead = addressRead{
	param:   "agentId",
	kind:    "agent",
	caching: agentCaching,
	load: func(a *API, ctx context.Context, id string) (any, bool, error) {
		ag, err := a.deps.Store.GetAgent(ctx, id, a.deps.Now())
		return dataBody{Data: ag}, false, err
	},
	notFound: agentNotFound,
}

func (a *API) getAgentStats(c *fiber.Ctx) error { return a.readAddress(c, &agentStatsRead) }

var agentStatsRead = addressRead{
	param:   "agentId",
	kind:    "agent-stats",
	caching: agentCaching,
	load: func(a *API, ctx context.Context, id string) (any, bool, error) {
		st, err := a.deps.Store.GetAgentStats(ctx, id, a.deps.Now())
		if st.RecentAttestations == nil {
			st.RecentAttestations = []attestation.Attestation{}
		}
		return dataBody{Data: st}, false, err
	},
	notFound: agentNotFound,
}

func agentCaching(a *API, id string, _ bool) cacheable {
	return cacheable{control: a.control.index, general: httpcache.KeyAgents, prefix: httpcache.PrefixAgent, id: id}
}

func agentNotFound(id string) error {
	return apierror.NotFound(apierror.CodeAgentNotFound, "no agent with pda %s", id)
}
