package httpapi

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/gofiber/fiber/v2"
)

// Body returns the request body, decoded from its Content-Encoding, and
// refuses with 413 any body whose bytes (as sent, or once decoded) exceed
// limit. Every handler reads its body here, never through Fiber's
// c.Body(), which decodes any number of stacked encodings with no bound
// on the output: a few hundred bytes of gzip can expand to gigabytes.
//
// Accepted encodings: none (or identity), gzip (x-gzip) and deflate (zlib,
// or raw deflate), one layer at most; anything else is 415. Decoding
// stops at limit+1 bytes, so an oversized body is never held in memory.
// The result is a fresh copy, safe to keep after the handler returns.
func Body(c *fiber.Ctx, limit int) ([]byte, error) {
	tooLarge := func() ([]byte, error) {
		return nil, apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge,
			"the body must be at most %d bytes (decoded)", limit)
	}
	raw := c.Request().Body() // as sent: fasthttp does not decode it
	if len(raw) > limit {
		return tooLarge()
	}
	enc, err := contentEncoding(c)
	if err != nil {
		return nil, err
	}
	if enc == "" {
		return bytes.Clone(raw), nil
	}
	var r io.Reader
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, undecodable(enc)
		}
		zr.Multistream(false)
		r = zr
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some clients send raw deflate.
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(raw))
		}
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(out) > limit {
		return tooLarge()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, undecodable(enc)
	}
	return out, nil
}

func undecodable(enc string) error {
	return apierror.Invalid("the body is not valid %s data (Content-Encoding: %s)", enc, enc)
}

// maxEncodingHeader bounds the Content-Encoding values looked at.
const maxEncodingHeader = 256

// contentEncoding is the one content coding of the request ("" for none),
// from every Content-Encoding header line; more than one coding, or one
// this API does not decode, is 415.
func contentEncoding(c *fiber.Ctx) (string, error) {
	var all []byte
	c.Request().Header.VisitAll(func(k, v []byte) {
		if strings.EqualFold(string(k), fiber.HeaderContentEncoding) && len(all) <= maxEncodingHeader {
			all = append(append(all, ','), v...)
		}
	})
	if len(all) > maxEncodingHeader {
		return "", unsupportedEncoding("too many content codings")
	}
	var enc string
	for _, f := range strings.Split(string(all), ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "", "identity":
			continue
		case "gzip", "x-gzip", "deflate":
		default:
			return "", unsupportedEncoding("Content-Encoding " + excerpt.Of(f, MaxEcho) + " is not supported")
		}
		if enc != "" {
			return "", unsupportedEncoding("at most one content coding is accepted")
		}
		enc = f
	}
	return enc, nil
}

func unsupportedEncoding(why string) error {
	return apierror.New(http.StatusUnsupportedMediaType, apierror.CodeUnsupportedMedia,
		"%s; send the body plain, or with one of gzip or deflate", why)
}
