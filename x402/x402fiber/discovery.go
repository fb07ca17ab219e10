package x402fiber

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/gofiber/fiber/v2"
)

// Discovery paths, at the origin's root.
const (
	PathWellKnown = "/.well-known/x402"
	PathJWKS      = "/.well-known/jwks.json"
	PathDID       = "/.well-known/did.json"
	PathLLMs      = "/llms.txt"
)

// discoveryControl: discovery documents change only with the configuration.
const discoveryControl = "public, max-age=300"

// Discovery serves what lets paying agents find and trust the payable
// routes: /.well-known/x402 (every payable resource, from the same catalog
// as the 402s), /llms.txt (the same in words), and the receipt key as a
// JWKS and a did:web document. Documents are encoded once.
type Discovery struct {
	v      *verifier.Verifier
	origin config.Origin
	mcp    verifier.MCPEndpoint // zero: the node serves no MCP endpoint
	loaded time.Time
	mu     sync.Mutex
	full   verifier.Discovery // every item, once the fee payer is known
	doc    []byte             // /.well-known/x402's first page (the default), encoded
	llms   []byte
	jwks   []byte
	did    []byte
}

// DiscoveryOption adds to what the discovery documents describe.
type DiscoveryOption func(*Discovery)

// WithMCP describes the node's MCP endpoint too (internal/mcp builds m):
// its paid tools in /.well-known/x402 (items of type mcp, each priced as
// the route it calls), and the endpoint, its tools and how to pay them in
// /llms.txt.
func WithMCP(m verifier.MCPEndpoint) DiscoveryOption {
	return func(d *Discovery) { d.mcp = m }
}

// NewDiscovery describes v's routes at origin.
func NewDiscovery(v *verifier.Verifier, origin config.Origin, opts ...DiscoveryOption) (*Discovery, error) {
	d := &Discovery{v: v, origin: origin, loaded: time.Now().Truncate(time.Second)}
	for _, o := range opts {
		o(d)
	}
	d.llms = []byte(v.Config().LLMsText(origin, v.Receipts() != nil, d.mcp))
	if s := v.Receipts(); s != nil {
		var err error
		if d.jwks, err = json.Marshal(s.JWKS()); err != nil {
			return nil, err
		}
		if d.did, err = json.Marshal(s.DIDDocument()); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Routes mounts the discovery documents at the origin's root (GET and
// HEAD), with r.Page.
func (d *Discovery) Routes(r httpapi.Router) {
	page := r.Page
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		page(m, PathWellKnown, d.wellKnown)
		page(m, PathLLMs, d.llmsTxt)
		if d.jwks != nil {
			page(m, PathJWKS, d.sendJWKS)
			page(m, PathDID, d.sendDID)
		}
	}
}

// Document is the /.well-known/x402 document's bytes, its first page
// (false while the fee payer is not known: a facilitator not reached yet).
func (d *Discovery) Document() ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.doc != nil {
		return d.doc, true
	}
	fp, ok := d.v.FeePayer()
	if !ok {
		return nil, false
	}
	full := d.v.Config().DiscoveryDocument(d.origin, fp.String(), d.loaded, d.mcp)
	b, err := json.Marshal(full.Page(verifier.DiscoveryDefaultLimit, 0))
	if err != nil {
		return nil, false
	}
	d.full, d.doc = full, b
	return b, true
}

func (d *Discovery) wellKnown(c *fiber.Ctx) error {
	b, ok := d.Document()
	if !ok {
		return apierror.Unavailable("the payment catalog is not ready (the facilitator has not answered yet); try again shortly")
	}
	if len(c.Request().URI().QueryString()) == 0 {
		return send(c, b, fiber.MIMEApplicationJSON)
	}
	d.mu.Lock()
	full := d.full
	d.mu.Unlock()
	types := full.Types()
	if !slices.Contains(types, "http") {
		types = append([]string{"http"}, types...) // the routes' type, even with none priced
	}
	limit, offset, typ, err := discoveryPage(c, types)
	if err != nil {
		return err
	}
	page, err := json.Marshal(full.OfType(typ).Page(limit, offset))
	if err != nil {
		return err
	}
	return send(c, page, fiber.MIMEApplicationJSON)
}

// discoveryPage reads the parameters of GET /discovery/resources (x402
// v2): limit 1 to 100 (default 20; more is clamped to 100, as
// pagination.limit then says), offset from 0 (default 0) and type, one of
// types, the types of the items listed ("http" for the routes, "mcp" for
// the paid tools of the node's MCP endpoint; "" when absent: every item).
// A type not listed here is refused rather than answered with an empty
// list a client could take for "nothing for sale". A malformed limit,
// offset or type, or one of the three given twice, is 400; other
// parameters are ignored (a crawler's cache buster, a facilitator's
// filters).
func discoveryPage(c *fiber.Ctx, types []string) (limit, offset int, typ string, err error) {
	limit = verifier.DiscoveryDefaultLimit
	seen := map[string]bool{}
	var bad error
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		key := string(k)
		if bad != nil || (key != "limit" && key != "offset" && key != "type") {
			return
		}
		if seen[key] {
			bad = apierror.Invalid("query parameter %s is given twice", key)
			return
		}
		seen[key] = true
		switch key {
		case "limit":
			n, ok := smallNumber(v)
			if !ok || n < 1 {
				bad = apierror.Invalid("limit must be a whole number from 1 to %d", verifier.DiscoveryMaxLimit)
				return
			}
			limit = min(n, verifier.DiscoveryMaxLimit)
		case "offset":
			n, ok := smallNumber(v)
			if !ok {
				bad = apierror.Invalid("offset must be a whole number from 0 to 1000000")
				return
			}
			offset = n
		case "type":
			typ = string(v)
			if !slices.Contains(types, typ) {
				bad = apierror.Invalid("type must be %s (the types of the payable resources listed here), got %q",
					strings.Join(types, " or "), excerpt.Of(typ, 32))
			}
		}
	})
	return limit, offset, typ, bad
}

// smallNumber reads 1 to 7 decimal digits (at most 1,000,000).
func smallNumber(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 7 {
		return 0, false
	}
	n := 0
	for _, ch := range v {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	return n, n <= 1_000_000
}

func (d *Discovery) llmsTxt(c *fiber.Ctx) error {
	return send(c, d.llms, "text/plain; charset=utf-8")
}

func (d *Discovery) sendJWKS(c *fiber.Ctx) error { return send(c, d.jwks, "application/jwk-set+json") }

func (d *Discovery) sendDID(c *fiber.Ctx) error { return send(c, d.did, "application/did+json") }

func send(c *fiber.Ctx, b []byte, ctype string) error {
	c.Set(fiber.HeaderContentType, ctype)
	c.Set(fiber.HeaderCacheControl, discoveryControl)
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	return c.Send(b) // fasthttp sends no body to HEAD
}
