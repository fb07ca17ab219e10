package app

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/store"
	"github.com/gofiber/fiber/v2"
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
	args := c.Context().QueryArgs()
	if args.Len() == 0 {
		return nil, nil // reads of a nil map find nothing; no allocation on the hot path
	}
	out := make(map[string]string, args.Len())
	var err error
	args.VisitAll(func(k, v []byte) {
		if err != nil {
			return
		}
		key := "" // the allowed name it matches: a constant, no copy of k
		for _, a := range allowed {
			if a == string(k) { // compared in place, not converted
				key = a
				break
			}
		}
		switch {
		case key == "" && len(allowed) == 0:
			err = apierror.Invalid("unknown query parameter %q; this route takes none", k)
			return
		case key == "":
			err = apierror.Invalid("unknown query parameter %q; allowed: %s", k, strings.Join(allowed, ", "))
			return
		}
		if _, dup := out[key]; dup {
			err = apierror.Invalid("query parameter %q given more than once", key)
			return
		}
		out[key] = string(v)
	})
	return out, err
}

// ParseLimit parses limit: default def, clamped to max, 400 when not a
// whole number >= 1.
func ParseLimit(v string, present bool, def, max int) (int, error) {
	if !present {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, apierror.Invalid("limit must be a whole number from 1 to %d (larger values are clamped), got %q", max, v)
	}
	if n > int64(max) {
		return max, nil
	}
	return int(n), nil
}

// ParseOffset parses offset: 0 when absent, 400 when negative, not a
// number or above max.
func ParseOffset(v string, present bool, max int) (int, error) {
	if !present {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apierror.Invalid("offset must be a whole number >= 0, got %q", v)
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

func parseActionType(v string) (attestation.ActionType, error) {
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

// DecodeCursor parses a cursor EncodeCursor made (400 otherwise).
func DecodeCursor(s string) (*store.Cursor, error) {
	bad := apierror.Invalid("cursor is not one this API issued; pass pagination.nextCursor unchanged")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) > 128 {
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

// parseListQuery validates GET /attestations parameters.
func parseListQuery(c *fiber.Ctx) (listQuery, error) {
	var q listQuery
	p, err := QueryParams(c, "limit", "offset", "cursor", "agentPda", "actionType", "from", "to")
	if err != nil {
		return q, err
	}
	v, ok := p["limit"]
	if q.filter.Limit, err = ParseLimit(v, ok, DefaultLimit, MaxLimit); err != nil {
		return q, err
	}
	v, ok = p["offset"]
	if q.filter.Offset, err = ParseOffset(v, ok, MaxOffset); err != nil {
		return q, err
	}
	if v, ok := p["cursor"]; ok {
		if q.filter.Offset != 0 {
			return q, apierror.Invalid("use either cursor or offset, not both")
		}
		if q.filter.After, err = DecodeCursor(v); err != nil {
			return q, err
		}
		q.cursor = v
	}
	if v, ok := p["agentPda"]; ok {
		if q.filter.AgentPDA, err = ParseAddress("agentPda", v); err != nil {
			return q, err
		}
	}
	if v, ok := p["actionType"]; ok {
		t, err := parseActionType(v)
		if err != nil {
			return q, err
		}
		q.filter.ActionType = &t
	}
	if q.filter.Range, err = ParseRange(p); err != nil {
		return q, err
	}
	return q, nil
}

// cacheKey is an injective encoding of the normalised query.
func (q listQuery) cacheKey() string {
	f := q.filter
	k := cache.NewKey("list").String(f.AgentPDA).Range(f.Range).Int(int64(f.Limit)).Int(int64(f.Offset)).String(q.cursor)
	if f.ActionType != nil {
		k.Int(int64(*f.ActionType))
	} else {
		k.Absent()
	}
	return k.Key()
}
