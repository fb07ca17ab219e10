package httpapi

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
)

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
