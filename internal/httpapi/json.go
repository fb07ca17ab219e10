package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"sync"

	"github.com/attestd/attestd/cache"
	"github.com/gofiber/fiber/v2"
)

// MaxEcho bounds the excerpt of a client's value (a method, a path, a
// parameter) that an error message quotes.
const MaxEcho = 64

// compressFrom is the size from which SendJSON compresses an answer for a
// client that accepts gzip; below it the saving is not worth the CPU.
const compressFrom = 8 << 10

// fastGzip compresses answers made per request (cached answers are
// compressed once, when cached, at the default level).
var fastGzip = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// SendJSON writes JSON bytes made for this request as the answer (with
// a final newline, added when they lack one),
// gzip-compressed (fastest level) when they are large and the client
// accepts gzip. Cached bytes go through SendValue instead.
func SendJSON(c *fiber.Ctx, b []byte) error {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	if len(b) < compressFrom {
		return c.Send(b)
	}
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if !AcceptsGzip(c) {
		return c.Send(b)
	}
	var buf bytes.Buffer
	buf.Grow(len(b) / 4)
	zw := fastGzip.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, err := zw.Write(b)
	if err == nil {
		err = zw.Close()
	}
	fastGzip.Put(zw)
	if err != nil { // writing to memory does not fail; answer plain if it ever does
		return c.Send(b)
	}
	c.Set(fiber.HeaderContentEncoding, "gzip")
	return c.Send(buf.Bytes())
}

// SendValue writes a cached value, gzip-compressed (compressed once, when
// it was cached) when the client accepts gzip. It sets no validator and no
// Cache-Control: premium routes use it for private answers. Public answers
// go through the API's cache (package app), with their validators.
func SendValue(c *fiber.Ctx, v cache.Value) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	if v.Gzip == nil {
		return c.Send(v.JSON)
	}
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if AcceptsGzip(c) {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(v.Gzip)
	}
	return c.Send(v.JSON)
}

// Marshal is v as the API answers JSON: encoding/json's bytes and a final
// newline (so a terminal shows the prompt on its own line after curl).
// Every JSON answer is made with it, cached or not.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
