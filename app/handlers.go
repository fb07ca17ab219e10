package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// Pagination is the pagination object of list answers.
type Pagination struct {
	Limit      int    `json:"limit"`
	Offset     int    `json:"offset"`
	Total      int64  `json:"total"`
	NextCursor string `json:"nextCursor,omitempty"`
}

type listBody struct {
	Data       []attestation.Attestation `json:"data"`
	Pagination Pagination                `json:"pagination"`
}

type dataBody struct {
	Data any `json:"data"`
}

// compressFrom is the size from which SendJSON compresses an answer for a
// client that accepts gzip; below it the saving is not worth the CPU.
const compressFrom = 8 << 10

// fastGzip compresses answers made per request (cached answers are
// compressed once, when cached, at the default level).
var fastGzip = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// SendJSON writes JSON bytes made for this request as the answer,
// gzip-compressed (fastest level) when they are large and the client
// accepts gzip. Cached bytes go through SendValue instead.
func SendJSON(c *fiber.Ctx, b []byte) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	if len(b) < compressFrom {
		return c.Send(b)
	}
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if !acceptsGzip(c) {
		return c.Send(b)
	}
	var buf bytes.Buffer
	buf.Grow(len(b) / 4)
	zw := fastGzip.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, err := zw.Write(b)
	if err == nil {
		err = zw.Close()
	}
	fastGzip.Put(zw)
	if err != nil { // writing to memory does not fail; answer plain if it ever does
		return c.Send(b)
	}
	c.Set(fiber.HeaderContentEncoding, "gzip")
	return c.Send(buf.Bytes())
}

// SendValue writes a cached value, gzip-compressed (compressed once, when
// it was cached) when the client accepts gzip.
func SendValue(c *fiber.Ctx, v cache.Value) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	if v.Gzip == nil {
		return c.Send(v.JSON)
	}
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if acceptsGzip(c) {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(v.Gzip)
	}
	return c.Send(v.JSON)
}

// acceptsGzip reports whether the request's Accept-Encoding (every line
// of it) makes gzip acceptable: listed with a q above 0, or not listed and
// "*" listed with a q above 0. The q parameter's name is case-insensitive;
// a malformed q counts as 0.
func acceptsGzip(c *fiber.Ctx) bool {
	var lines []string
	c.Request().Header.VisitAll(func(k, v []byte) {
		if strings.EqualFold(string(k), fiber.HeaderAcceptEncoding) {
			lines = append(lines, string(v))
		}
	})
	return gzipAcceptable(strings.Join(lines, ","))
}

func gzipAcceptable(h string) bool {
	gzipQ, starQ := -1, -1 // thousandths; -1: not listed
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(part, ";")
		q := 1000
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				q = parseQValue(strings.TrimSpace(v))
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "gzip", "x-gzip":
			gzipQ = max(gzipQ, q)
		case "*":
			starQ = max(starQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// parseQValue reads an RFC 9110 qvalue ("0", "0.5", "1.000") in
// thousandths; anything else is 0.
func parseQValue(v string) int {
	whole, frac, _ := strings.Cut(v, ".")
	if (whole != "0" && whole != "1") || len(frac) > 3 {
		return 0
	}
	n := int(whole[0]-'0') * 1000
	for i, scale := 0, 100; i < len(frac); i, scale = i+1, scale/10 {
		if frac[i] < '0' || frac[i] > '9' {
			return 0
		}
		n += int(frac[i]-'0') * scale
	}
	if n > 1000 {
		return 0
	}
	return n
}

func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b, nil
}

// cached answers a read from the cache, loading it with load on a miss.
// load returns the response body and whether it can never change; a
// store.ErrNotFound from it becomes notFound.
func (a *API) cached(c *fiber.Ctx, key string, notFound *apierror.Error, load func(ctx context.Context) (any, bool, error)) error {
	v, _, err := a.deps.Cache.GetValue(c.UserContext(), key, func(ctx context.Context) ([]byte, bool, error) {
		body, immutable, err := load(ctx)
		if err != nil {
			return nil, false, LoadError(err)
		}
		b, err := marshal(body)
		return b, immutable, err
	})
	if errors.Is(err, cache.ErrNotFound) && notFound != nil {
		return notFound
	}
	if err != nil {
		return err
	}
	return SendValue(c, v)
}

// pathAddress validates the only-path-parameter routes: no query
// parameters, and an address in the path.
func pathAddress(c *fiber.Ctx, param string) (string, error) {
	if _, err := QueryParams(c); err != nil {
		return "", err
	}
	return ParseAddress(param, c.Params(param))
}

func (a *API) stats(c *fiber.Ctx) error {
	if _, err := QueryParams(c); err != nil {
		return err
	}
	return a.cached(c, cache.NewKey("stats").Key(), nil, func(ctx context.Context) (any, bool, error) {
		st, err := a.deps.Store.Stats(ctx, a.deps.Now())
		return st, false, err
	})
}

func (a *API) listAttestations(c *fiber.Ctx) error {
	q, err := parseListQuery(c)
	if err != nil {
		return err
	}
	return a.cached(c, q.cacheKey(), nil, func(ctx context.Context) (any, bool, error) {
		page, err := a.deps.Store.ListAttestations(ctx, q.filter)
		if err != nil {
			return nil, false, err
		}
		body := listBody{Data: page.Items, Pagination: Pagination{Limit: q.filter.Limit, Offset: q.filter.Offset, Total: page.Total}}
		if body.Data == nil {
			body.Data = []attestation.Attestation{}
		}
		if page.Next != nil {
			body.Pagination.NextCursor = EncodeCursor(page.Next)
		}
		return body, false, nil
	})
}

func (a *API) getAttestation(c *fiber.Ctx) error {
	id, err := pathAddress(c, "id")
	if err != nil {
		return err
	}
	notFound := apierror.NotFound(apierror.CodeAttestationNotFound, "no attestation with pda %s", id)
	return a.cached(c, cache.NewKey("attestation").String(id).Key(), notFound, func(ctx context.Context) (any, bool, error) {
		at, err := a.deps.Store.GetAttestation(ctx, id)
		return dataBody{Data: at}, at.Commitment == attestation.Finalized, err
	})
}

func (a *API) getAgent(c *fiber.Ctx) error {
	id, err := pathAddress(c, "agentId")
	if err != nil {
		return err
	}
	notFound := apierror.NotFound(apierror.CodeAgentNotFound, "no agent with pda %s", id)
	return a.cached(c, cache.NewKey("agent").String(id).Key(), notFound, func(ctx context.Context) (any, bool, error) {
		ag, err := a.deps.Store.GetAgent(ctx, id, a.deps.Now())
		return dataBody{Data: ag}, false, err
	})
}

func (a *API) getAgentStats(c *fiber.Ctx) error {
	id, err := pathAddress(c, "agentId")
	if err != nil {
		return err
	}
	notFound := apierror.NotFound(apierror.CodeAgentNotFound, "no agent with pda %s", id)
	return a.cached(c, cache.NewKey("agent-stats").String(id).Key(), notFound, func(ctx context.Context) (any, bool, error) {
		st, err := a.deps.Store.GetAgentStats(ctx, id, a.deps.Now())
		if st.RecentAttestations == nil {
			st.RecentAttestations = []attestation.Attestation{}
		}
		return dataBody{Data: st}, false, err
	})
}
