package x402fiber

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/config"
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
	loaded int64
	mu     sync.Mutex
	doc    []byte // /.well-known/x402 once the fee payer is known
	llms   []byte
	jwks   []byte
	did    []byte
}

// NewDiscovery describes v's routes at origin.
func NewDiscovery(v *verifier.Verifier, origin config.Origin) (*Discovery, error) {
	d := &Discovery{v: v, origin: origin, loaded: time.Now().Unix()}
	d.llms = []byte(v.Config().LLMsText(origin, v.Receipts() != nil))
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

// Page adds a route at the origin's root (app.API.Page).
type Page func(method, path string, handlers ...fiber.Handler)

// Routes mounts the discovery documents with page (GET and HEAD).
func (d *Discovery) Routes(page Page) {
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		page(m, PathWellKnown, d.wellKnown)
		page(m, PathLLMs, d.llmsTxt)
		if d.jwks != nil {
			page(m, PathJWKS, d.sendJWKS)
			page(m, PathDID, d.sendDID)
		}
	}
}

// Document is the /.well-known/x402 document's bytes (false while the fee
// payer is not known: a facilitator not reached yet).
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
	b, err := json.Marshal(d.v.Config().DiscoveryDocument(d.origin, fp.String(), d.loaded))
	if err != nil {
		return nil, false
	}
	d.doc = b
	return b, true
}

func (d *Discovery) wellKnown(c *fiber.Ctx) error {
	b, ok := d.Document()
	if !ok {
		return apierror.Unavailable("the payment catalog is not ready (the facilitator has not answered yet); try again shortly")
	}
	return send(c, b, fiber.MIMEApplicationJSON)
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
