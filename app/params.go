package app

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"github.com/mr-tron/base58"
)

// Paging limits of GET /attestations.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	MaxOffset    = 100_000 // deeper pages: use the cursor
)

// listQuery is a parsed, validated GET /attestations query.
type listQuery struct {
	filter store.Filter
	cursor string // as given, for the cache key
}

// QueryParams returns the query parameters, rejecting unknown names and
// repeated ones so a typo is a clear 400 rather than a silently wider answer.
func QueryParams(c *fiber.Ctx, allowed ...string) (map[string]string, error) {
	q, err := checkQuery(c, allowed)
	if err != nil || q.present == 0 {
		return nil, err // reads of a nil map find nothing; no allocation on the hot path
	}
	out := make(map[string]string, bits.OnesCount32(q.present))
	for i, name := range allowed {
		if v, ok := q.get(i); ok {
			out[name] = string(v)
		}
	}
	return out, nil
}

// maxQueryNames bounds the names one route takes.
const maxQueryNames = 16

// queryArgs is a request's query checked against the names its route
// takes (allowed): at most one value each, no other name. It holds the
// values without copying them, so it must not outlive the request.
type queryArgs struct {
	vals    [maxQueryNames][]byte // by index in allowed
	present uint32                // bit i: allowed[i] was given
}

// get returns allowed[i]'s value and whether it was given.
func (q *queryArgs) get(i int) ([]byte, bool) { return q.vals[i], q.present&(1<<i) != 0 }

// checkQuery applies QueryParams's rules without allocating: the values
// stay in the request's buffers (see queryArgs).
func checkQuery(c *fiber.Ctx, allowed []string) (queryArgs, error) {
	var q queryArgs
	if len(allowed) > maxQueryNames {
		panic("app: a route takes more than 16 query parameters")
	}
	args := c.Context().QueryArgs()
	if args.Len() == 0 {
		return q, nil
	}
	var err error
	args.VisitAll(func(k, v []byte) {
		if err != nil {
			return
		}
		i := slices.IndexFunc(allowed, func(a string) bool { return a == string(k) }) // compared in place
		switch {
		case i < 0 && len(allowed) == 0:
			err = apierror.Invalid("unknown query parameter %q; this route takes none", k)
		case i < 0:
			err = apierror.Invalid("unknown query parameter %q; allowed: %s", k, strings.Join(allowed, ", "))
		case q.present&(1<<i) != 0:
			err = apierror.Invalid("query parameter %q given more than once", allowed[i])
		default:
			q.vals[i], q.present = v, q.present|1<<i
		}
	})
	return q, err
}

// ParseLimit parses limit: default def, clamped to max, 400 when not a
// whole number >= 1. v may be the request's bytes: it is not kept.
func ParseLimit[V ~string | ~[]byte](v V, present bool, def, max int) (int, error) {
	if !present {
		return def, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 1 {
		return 0, apierror.Invalid("limit must be a whole number from 1 to %d (larger values are clamped), got %q", max, string(v))
	}
	if n > int64(max) {
		return max, nil
	}
	return int(n), nil
}

// ParseOffset parses offset: 0 when absent, 400 when negative, not a
// number or above max. v may be the request's bytes: it is not kept.
func ParseOffset[V ~string | ~[]byte](v V, present bool, max int) (int, error) {
	if !present {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		return 0, apierror.Invalid("offset must be a whole number >= 0, got %q", string(v))
	}
	if n > int64(max) {
		return 0, apierror.Invalid("offset must be at most %d; page deeper with the cursor (pagination.nextCursor)", max)
	}
	return int(n), nil
}

// ParseAddress parses a base58 Solana address and returns its canonical
// form; name is the parameter's name for the message.
func ParseAddress(name, v string) (string, error) {
	if _, err := attestation.ParseAddress(v); err != nil {
		return "", apierror.Invalid("%s must be a base58 Solana address (32 bytes): %v", name, err)
	}
	// Base58 has one spelling per byte string (leading '1's are the
	// leading zero bytes, the rest a number without leading zeros), so a
	// string that decodes to 32 bytes is already their canonical form
	// (FuzzParseAddressIsCanonical): copy it rather than encode again.
	return strings.Clone(v), nil
}

// ParseActionType parses an actionType parameter (400 in the envelope
// when it names no action type).
func ParseActionType(v string) (attestation.ActionType, error) {
	t, err := attestation.ParseActionType(v)
	if err != nil {
		return 0, apierror.Invalid("actionType must be one of %s, got %q", strings.Join(attestation.ActionTypeNames(), ", "), v)
	}
	return t, nil
}

// EncodeCursor makes the opaque nextCursor of a page.
func EncodeCursor(c *store.Cursor) string {
	raw := fmt.Sprintf("%d.%d.%s", c.Timestamp.Unix(), c.Slot, c.PDA)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// maxCursorRaw bounds a decoded cursor: seconds, slot and a base58 pda.
const maxCursorRaw = 128

// DecodeCursor parses a cursor EncodeCursor made (400 otherwise). Its
// length is checked before anything is decoded.
func DecodeCursor(s string) (*store.Cursor, error) {
	bad := apierror.Invalid("cursor is not one this API issued; pass pagination.nextCursor unchanged")
	if len(s) > base64.RawURLEncoding.EncodedLen(maxCursorRaw) {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > maxCursorRaw {
		return nil, bad
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 {
		return nil, bad
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	slot, err2 := strconv.ParseUint(parts[1], 10, 63)
	if err1 != nil || err2 != nil || sec < 0 || sec > 1<<40 {
		return nil, bad
	}
	if _, err := attestation.ParseAddress(parts[2]); err != nil {
		return nil, bad
	}
	return &store.Cursor{Timestamp: time.Unix(sec, 0).UTC(), Slot: slot, PDA: parts[2]}, nil
}

// parsePage reads the paging parameters, which are p's first three:
// limit, offset and cursor (decoded by decode; not with an offset).
func parsePage[C any](p queryArgs, decode func(string) (*C, error)) (limit, offset int, cursor string, after *C, err error) {
	v, ok := p.get(0)
	if limit, err = ParseLimit(v, ok, DefaultLimit, MaxLimit); err != nil {
		return
	}
	v, ok = p.get(1)
	if offset, err = ParseOffset(v, ok, MaxOffset); err != nil {
		return
	}
	if v, ok := p.get(2); ok {
		if offset != 0 {
			return limit, offset, "", nil, apierror.Invalid("use either cursor or offset, not both")
		}
		cursor = string(v)
		after, err = decode(cursor)
	}
	return
}

// listParams are the query parameters of GET /attestations, in the order
// parseListQuery reads them.
var listParams = []string{"limit", "offset", "cursor", "agentPda", "actionType", "from", "to", "actionHash", "txSignature"}

// parseListQuery validates GET /attestations parameters. The common ones
// (limit, offset) are read from the request's bytes without copying.
func parseListQuery(c *fiber.Ctx) (listQuery, error) {
	var q listQuery
	p, err := checkQuery(c, listParams)
	if err != nil {
		return q, err
	}
	if q.filter.Limit, q.filter.Offset, q.cursor, q.filter.After, err = parsePage(p, DecodeCursor); err != nil {
		return q, err
	}
	if v, ok := p.get(3); ok {
		if q.filter.AgentPDA, err = ParseAddress("agentPda", string(v)); err != nil {
			return q, err
		}
	}
	if v, ok := p.get(4); ok {
		t, err := ParseActionType(string(v))
		if err != nil {
			return q, err
		}
		q.filter.ActionType = &t
	}
	from, hasFrom := p.get(5)
	to, hasTo := p.get(6)
	if q.filter.Range, err = parseRange(string(from), hasFrom, string(to), hasTo); err != nil {
		return q, err
	}
	if v, ok := p.get(7); ok {
		h, err := ParseActionHash(v)
		if err != nil {
			return q, err
		}
		q.filter.ActionHash = h[:]
	}
	if v, ok := p.get(8); ok {
		if q.filter.TxSignature, err = ParseTxSignature(v); err != nil {
			return q, err
		}
	}
	return q, nil
}

// ParseActionHash parses an actionHash parameter: a SHA-256 as 64
// hexadecimal characters (either case; the lists write lowercase). v may
// be the request's bytes: it is not kept.
func ParseActionHash[V ~string | ~[]byte](v V) ([32]byte, error) {
	var h [32]byte
	if len(v) != 64 {
		return h, apierror.Invalid("actionHash must be a SHA-256 in 64 hexadecimal characters, got %d characters", len(v))
	}
	if _, err := hex.Decode(h[:], []byte(v)); err != nil {
		return h, apierror.Invalid("actionHash must be a SHA-256 in 64 hexadecimal characters (0-9, a-f)")
	}
	return h, nil
}

// Lengths of the base58 text of a transaction signature (64 bytes).
const (
	minSignatureLen = 64
	maxSignatureLen = 88
)

// ParseTxSignature parses a txSignature parameter: a transaction
// signature in base58 (64 bytes). Base58 spells each byte string one
// way, so the text returned (a copy) is the canonical form.
func ParseTxSignature[V ~string | ~[]byte](v V) (string, error) {
	if len(v) < minSignatureLen || len(v) > maxSignatureLen {
		return "", apierror.Invalid("txSignature must be a transaction signature: 64 to 88 base58 characters, got %d", len(v))
	}
	b, err := base58.Decode(string(v))
	if err != nil || len(b) != 64 {
		return "", apierror.Invalid("txSignature must be a transaction signature: base58 of 64 bytes")
	}
	return string(v), nil
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
