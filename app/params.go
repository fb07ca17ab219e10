package app

import (
	"encoding/hex"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
)

// listQuery is a parsed, validated GET /attestations query.
type listQuery struct {
	filter store.Filter
	cursor string // as given, for the cache key
}

// listParams are the query parameters of GET /attestations, in the order
// parseListQuery reads them.
var listParams = []string{"limit", "offset", "cursor", "agentPda", "actionType", "from", "to", "actionHash", "txSignature"}

// parseListQuery validates GET /attestations parameters. The common ones
// (limit, offset) are read from the request's bytes without copying.
func parseListQuery(c *fiber.Ctx) (listQuery, error) {
	var q listQuery
	p, err := httpapi.CheckQuery(c, listParams)
	if err != nil {
		return q, err
	}
	if q.filter.Limit, q.filter.Offset, q.cursor, q.filter.After, err = httpapi.ParsePage(p, httpapi.DecodeCursor); err != nil {
		return q, err
	}
	if v, ok := p.Get(3); ok {
		if q.filter.AgentPDA, err = httpapi.ParseAddress("agentPda", string(v)); err != nil {
			return q, err
		}
	}
	if v, ok := p.Get(4); ok {
		t, err := httpapi.ParseActionType(string(v))
		if err != nil {
			return q, err
		}
		q.filter.ActionType = &t
	}
	from, hasFrom := p.Get(5)
	to, hasTo := p.Get(6)
	if q.filter.Range, err = httpapi.ParseBounds(string(from), hasFrom, string(to), hasTo); err != nil {
		return q, err
	}
	if v, ok := p.Get(7); ok {
		h, err := httpapi.ParseActionHash(v)
		if err != nil {
			return q, err
		}
		q.filter.ActionHash = h[:]
	}
	if v, ok := p.Get(8); ok {
		if q.filter.TxSignature, err = httpapi.ParseTxSignature(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

// cacheKey is an injective encoding of the normalised query, added to k
// (cache.NewKey("list"), made by the caller: on its stack).
func (q listQuery) cacheKey(k cache.Key) cache.Key {
	f := q.filter
	k = k.String(f.AgentPDA).Range(f.Range).Int(int64(f.Limit)).Int(int64(f.Offset)).String(q.cursor)
	if f.ActionType != nil {
		k = k.Int(int64(*f.ActionType))
	} else {
		k = k.Absent()
	}
	// Lookups: the hash's 32 bytes in lowercase hex ("" absent: a hash is
	// never empty), the signature as its canonical base58 ("" absent).
	if f.ActionHash != nil {
		var buf [64]byte
		hex.Encode(buf[:], f.ActionHash)
		k = k.String(string(buf[:]))
	} else {
		k = k.String("")
	}
	return k.String(f.TxSignature)
}
