package cache

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"sync"
)

// Value is a cached answer: its JSON and, when it is large enough to be
// worth it, the same bytes gzip-compressed once, at load time, so nodes
// can serve clients that accept gzip without compressing per request.
//
// Each representation has its strong entity tag (RFC 9110 8.8.3), computed
// once with it and stored beside it: a node answers a conditional request
// by comparing tags, without building or hashing the body. The tags of the
// two representations differ (they are different bytes).
type Value struct {
	JSON     []byte
	Gzip     []byte // nil for small values
	ETag     []byte // of JSON, quoted: "…"
	GzipETag []byte // of Gzip, quoted; nil when Gzip is nil
	// Immutable: the loader said the value can never change (a finalized
	// attestation).
	Immutable bool
}

// GzipMin is the size from which a value is stored compressed too.
const GzipMin = 1024

// Entry tags (the first byte of a stored entry).
const (
	tagNotFound = 'n'
	// tagValue: flags, u32 length of the JSON, the JSON's entity tag, the
	// gzip's entity tag when flagGzip, the JSON, then its gzip.
	tagValue = 'V'
)

// Entry flags (the second byte of a value entry).
const (
	flagImmutable = 1 << iota
	flagGzip
)

// Entity tags are a quoted prefix of the SHA-256 of the representation in
// base64url: 120 bits, so two different answers of one URL never share a
// tag. The gzip form's tag also says what it is, for people reading it.
const (
	etagHashBytes = 15
	etagLen       = 2 + etagHashBytes*4/3 // quotes + base64 of 15 bytes
	gzipETagLen   = etagLen + len("-gz")
	valueHeader   = 2 + 4 + etagLen // tag, flags, JSON length, identity tag
)

// appendETag appends the quoted entity tag of b, with suffix before the
// closing quote.
func appendETag(dst, b []byte, suffix string) []byte {
	sum := sha256.Sum256(b)
	dst = append(dst, '"')
	dst = base64.RawURLEncoding.AppendEncode(dst, sum[:etagHashBytes])
	dst = append(dst, suffix...)
	return append(dst, '"')
}

// ETagOf is the strong entity tag of bytes made per request (an answer
// that is not cached), in the same form as cached values'.
func ETagOf(b []byte) []byte { return appendETag(make([]byte, 0, etagLen), b, "") }

// MakeValue is the value a cache would hold for v: its gzip form when v is
// large, and the tags of both. For answers built once per process (the
// OpenAPI document).
func MakeValue(v []byte, immutable bool) Value {
	val, _ := decode(encode(v, immutable)) // decoding what encode made cannot fail
	return val
}

var gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression); return w }}

// encode makes the stored form of v.
func encode(v []byte, immutable bool) []byte {
	var flags byte
	if immutable {
		flags |= flagImmutable
	}
	var buf bytes.Buffer
	if len(v) < GzipMin {
		buf.Grow(valueHeader + len(v))
	} else {
		flags |= flagGzip
		buf.Grow(valueHeader + gzipETagLen + len(v) + len(v)/4)
	}
	buf.WriteByte(tagValue)
	buf.WriteByte(flags)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(v)))
	buf.Write(n[:])
	buf.Write(appendETag(make([]byte, 0, etagLen), v, ""))
	if flags&flagGzip == 0 {
		buf.Write(v)
		return buf.Bytes()
	}
	var zbuf bytes.Buffer
	zbuf.Grow(len(v) / 4)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&zbuf)
	_, _ = zw.Write(v)
	_ = zw.Close()
	gzipWriters.Put(zw)
	buf.Write(appendETag(make([]byte, 0, gzipETagLen), zbuf.Bytes(), "-gz"))
	buf.Write(v)
	buf.Write(zbuf.Bytes())
	return buf.Bytes()
}

var errCorrupt = errors.New("corrupt cache entry")

// decode reads a stored entry. The returned slices alias b.
func decode(b []byte) (Value, error) {
	if len(b) == 0 {
		return Value{}, errCorrupt
	}
	switch b[0] {
	case tagNotFound:
		return Value{}, ErrNotFound
	case tagValue:
		if len(b) < valueHeader {
			return Value{}, errCorrupt
		}
		flags := b[1]
		n := int(binary.BigEndian.Uint32(b[2:6]))
		v := Value{ETag: b[6:valueHeader:valueHeader], Immutable: flags&flagImmutable != 0}
		rest := b[valueHeader:]
		if flags&flagGzip != 0 {
			if len(rest) < gzipETagLen {
				return Value{}, errCorrupt
			}
			v.GzipETag, rest = rest[:gzipETagLen:gzipETagLen], rest[gzipETagLen:]
		}
		if n > len(rest) || (flags&flagGzip == 0 && n != len(rest)) {
			return Value{}, errCorrupt
		}
		v.JSON = rest[:n:n]
		if flags&flagGzip != 0 {
			v.Gzip = rest[n:]
		}
		return v, nil
	}
	return Value{}, errCorrupt
}
