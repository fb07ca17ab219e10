package cache

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"sync"
)

// Value is a cached answer: its JSON and, when it is large enough to be
// worth it, the same bytes gzip-compressed once, at load time, so nodes
// can serve clients that accept gzip without compressing per request.
type Value struct {
	JSON []byte
	Gzip []byte // nil for small values
}

// GzipMin is the size from which a value is stored compressed too.
const GzipMin = 1024

// Entry tags (the first byte of a stored entry).
const (
	tagValue    = 'v' // raw JSON follows
	tagNotFound = 'n'
	tagGzip     = 'z' // u32 length of the JSON, the JSON, then its gzip
)

var gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression); return w }}

// encode makes the stored form of v.
func encode(v []byte) []byte {
	if len(v) < GzipMin {
		b := make([]byte, 1+len(v))
		b[0] = tagValue
		copy(b[1:], v)
		return b
	}
	var buf bytes.Buffer
	buf.Grow(5 + len(v) + len(v)/4)
	buf.WriteByte(tagGzip)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(v)))
	buf.Write(n[:])
	buf.Write(v)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(v)
	_ = zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

var errCorrupt = errors.New("corrupt cache entry")

// decode reads a stored entry.
func decode(b []byte) (Value, error) {
	if len(b) == 0 {
		return Value{}, errCorrupt
	}
	switch b[0] {
	case tagNotFound:
		return Value{}, ErrNotFound
	case tagValue:
		return Value{JSON: b[1:]}, nil
	case tagGzip:
		if len(b) < 5 {
			return Value{}, errCorrupt
		}
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if n > len(b)-5 {
			return Value{}, errCorrupt
		}
		return Value{JSON: b[5 : 5+n], Gzip: b[5+n:]}, nil
	}
	return Value{}, errCorrupt
}
