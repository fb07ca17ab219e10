package httpapi

import (
	"math"
	"strconv"

	"github.com/attestd/attestd/internal/apierror"
)

// Paging limits of the list routes (GET /attestations and the lists that
// page the same way).
const (
	DefaultLimit = 20
	MaxLimit     = 100
	MaxOffset    = 100_000 // deeper pages: use the cursor
)

// Pagination is the pagination object of list answers.
type Pagination struct {
	Limit      int    `json:"limit"`
	Offset     int    `json:"offset"`
	Total      int64  `json:"total"`
	NextCursor string `json:"nextCursor,omitempty"`
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

// ParsePage reads the paging parameters, which are p's first three:
// limit, offset and cursor (decoded by decode; not with an offset).
func ParsePage[C any](p Query, decode func(string) (*C, error)) (limit, offset int, cursor string, after *C, err error) {
	v, ok := p.Get(0)
	if limit, err = ParseLimit(v, ok, DefaultLimit, MaxLimit); err != nil {
		return
	}
	v, ok = p.Get(1)
	if offset, err = ParseOffset(v, ok, MaxOffset); err != nil {
		return
	}
	if v, ok := p.Get(2); ok {
		if offset != 0 {
			return limit, offset, "", nil, apierror.Invalid("use either cursor or offset, not both")
		}
		cursor = string(v)
		after, err = decode(cursor)
	}
	return
}

// LimitOffset reads limit and offset from the parameters QueryParams
// returned: limit defaults to def and is clamped to max, offset is at
// most maxOffset. For the lists of an account's own things (keys,
// webhooks, delivery attempts), whose refusal of a deep offset names no
// cursor: most have none.
func LimitOffset(q map[string]string, def, max, maxOffset int) (limit, offset int, err error) {
	v, present := q["limit"]
	if limit, err = ParseLimit(v, present, def, max); err != nil {
		return 0, 0, err
	}
	v, present = q["offset"]
	if offset, err = ParseOffset(v, present, math.MaxInt32); err != nil {
		return 0, 0, err
	}
	if offset > maxOffset {
		return 0, 0, apierror.Invalid("offset must be at most %d, got %d", maxOffset, offset)
	}
	return limit, offset, nil
}
