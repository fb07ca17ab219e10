package cache

import (
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/store"
)

// Key builds a cache key that is an injective encoding of a request: the
// kind of answer, then each part with its type and length, so that no
// separator inside a value, no absent part and no value at another
// resolution can make two different requests share a key. Build every key
// of a request-dependent answer with it, and feed it the request after
// normalisation (two requests that must get the same answer then share a
// key; two that may differ never do).
//
// A Key is a value: each method returns the key with the part added, so
// build it in one expression or assign the result (k = k.Int(n)); a
// discarded result adds nothing. Kept as a value, a key that does not
// leave its function is built on the stack, and Bytes (for Cache.Peek)
// costs no allocation.
type Key struct{ b []byte }

// NewKey starts a key for answers of the given kind ("list",
// "full-history", ...).
func NewKey(kind string) Key {
	return Key{b: appendString(make([]byte, 0, 96), kind)}
}

// String adds a string, length-prefixed.
func (k Key) String(s string) Key {
	k.b = appendString(k.b, s)
	return k
}

func appendString(b []byte, s string) []byte {
	b = append(b, 's')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// Int adds an integer.
func (k Key) Int(n int64) Key {
	k.b = append(k.b, 'i')
	k.b = strconv.AppendInt(k.b, n, 10)
	k.b = append(k.b, ';')
	return k
}

// Absent marks an optional part that the request does not have.
func (k Key) Absent() Key {
	k.b = append(k.b, '-')
	return k
}

// Time adds an optional instant at full resolution (seconds and
// nanoseconds since the Unix epoch, no overflow for any year time.Time
// holds); nil is absent.
func (k Key) Time(t *time.Time) Key {
	if t == nil {
		return k.Absent()
	}
	k.b = append(k.b, 't')
	k.b = strconv.AppendInt(k.b, t.Unix(), 10)
	k.b = append(k.b, '.')
	k.b = strconv.AppendInt(k.b, int64(t.Nanosecond()), 10)
	k.b = append(k.b, ';')
	return k
}

// Range adds both bounds of a time range.
func (k Key) Range(r store.Range) Key { return k.Time(r.From).Time(r.To) }

// Key is the finished key.
func (k Key) Key() string { return string(k.b) }

// Bytes is the finished key, not copied (for Cache.Peek; the key must not
// be added to after).
func (k Key) Bytes() []byte { return k.b }
