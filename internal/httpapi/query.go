package httpapi

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// QueryParams returns the query parameters, rejecting unknown names and
// repeated ones so a typo is a clear 400 rather than a silently wider answer.
func QueryParams(c *fiber.Ctx, allowed ...string) (map[string]string, error) {
	q, err := CheckQuery(c, allowed)
	if err != nil || q.present == 0 {
		return nil, err // reads of a nil map find nothing; no allocation on the hot path
	}
	out := make(map[string]string, bits.OnesCount32(q.present))
	for i, name := range allowed {
		if v, ok := q.Get(i); ok {
			out[name] = string(v)
		}
	}
	return out, nil
}

// maxQueryNames bounds the names one route takes.
const maxQueryNames = 16

// Query is a request's query checked against the names its route takes
// (allowed): at most one value each, no other name. It holds the values
// without copying them, so it must not outlive the request.
type Query struct {
	vals    [maxQueryNames][]byte // by index in allowed
	present uint32                // bit i: allowed[i] was given
}

// Get returns allowed[i]'s value and whether it was given.
func (q *Query) Get(i int) ([]byte, bool) { return q.vals[i], q.present&(1<<i) != 0 }

// CheckQuery applies QueryParams's rules without allocating: the values
// stay in the request's buffers (see Query).
func CheckQuery(c *fiber.Ctx, allowed []string) (Query, error) {
	var q Query
	if len(allowed) > maxQueryNames {
		panic("httpapi: a route takes more than 16 query parameters")
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
