package httpapi

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// PrefersType reports whether the request's Accept asks for the media
// type want over fallback, the type a route answers otherwise: want is
// listed by name (case-insensitively; parameters other than q ignored)
// with a q-value above 0 and at least fallback's. Wildcards (*/*, text/*)
// ask for no type in particular, so they leave the route's fallback.
func PrefersType(c *fiber.Ctx, want, fallback string) bool {
	return prefersType(c.Request().Header.PeekAll(fiber.HeaderAccept), []byte(want), []byte(fallback))
}

func prefersType(lines [][]byte, want, fallback []byte) bool {
	wantQ, fallbackQ := -1, -1
	eachQ(lines, func(name []byte, q int) {
		switch {
		case bytes.EqualFold(name, want):
			wantQ = max(wantQ, q)
		case bytes.EqualFold(name, fallback):
			fallbackQ = max(fallbackQ, q)
		}
	})
	return wantQ > 0 && wantQ >= fallbackQ
}
