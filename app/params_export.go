package app

import (
	"time"

	"github.com/attestd/attestd/store"
	"github.com/gofiber/fiber/v2"
)

// The parsers of GET /attestations, exported so that feature packages
// (premium routes, keys) accept exactly the same formats and answer the same
// 400 INVALID_PARAM errors. Each returns an *apierror.Error on bad input.

// QueryParams returns the query parameters, rejecting names not in allowed
// and repeated names with 400. Values are copies (safe to keep).
func QueryParams(c *fiber.Ctx, allowed ...string) (map[string]string, error) {
	return queryParams(c, allowed...)
}

// ParseLimit parses a page size: def when absent, clamped to max, 400 when
// not a whole number >= 1.
func ParseLimit(v string, present bool, def, max int) (int, error) {
	return parseLimit(v, present, def, max)
}

// ParseOffset parses an offset: 0 when absent, 400 when negative, not a
// number or above max.
func ParseOffset(v string, present bool, max int) (int, error) {
	return parseOffset(v, present, max)
}

// ParseTime parses an RFC 3339 date-time or a YYYY-MM-DD date (midnight
// UTC); name is the parameter's name for the message.
func ParseTime(name, v string) (time.Time, error) { return parseTime(name, v) }

// ParseAddress parses a base58 Solana address and returns its canonical form.
func ParseAddress(name, v string) (string, error) { return parseAddress(name, v) }

// EncodeCursor makes the opaque pagination.nextCursor of a keyset page.
func EncodeCursor(c *store.Cursor) string { return encodeCursor(c) }

// DecodeCursor parses a cursor made by EncodeCursor (400 otherwise).
func DecodeCursor(s string) (*store.Cursor, error) { return decodeCursor(s) }
