package app

import (
	"bytes"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// Header names whose repetition changes where a request ends or whom it is
// for. fasthttp keeps the last Content-Length and the last Host, and lets
// Transfer-Encoding override Content-Length; a proxy in front may keep the
// first, or the other: the two then disagree on where the next request
// starts (request smuggling) or on the site it is for. RFC 9112 (sections
// 3.2, 6.1 and 6.3) lets a server refuse each of these shapes with 400 and
// close the connection; this API does.
var (
	hostName             = []byte("Host")
	contentLengthName    = []byte("Content-Length")
	transferEncodingName = []byte("Transfer-Encoding")
	chunkedValue         = []byte("chunked")
)

// framingMessage says what is ambiguous in the request's header block, or
// "". It reads the header lines as sent (fasthttp keeps a copy of them:
// its parsed headers hold only one Host and one Content-Length), without
// allocating: it runs on every request.
func framingMessage(raw []byte) string {
	var hosts, lengths, codings int
	otherCoding := false // a Transfer-Encoding other than exactly chunked
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			continue
		}
		// The first letter first: most lines are none of the three.
		switch line[0] | 0x20 {
		case 'h':
			if named(line, hostName) {
				hosts++
			}
		case 'c':
			if named(line, contentLengthName) {
				lengths++
			}
		case 't':
			if named(line, transferEncodingName) {
				codings++
				// fasthttp reads any coding but identity as chunked, so
				// "chunked, identity" or "gzip" is framed as chunked here
				// and otherwise elsewhere (RFC 9112 section 6.1: chunked
				// must be the final coding, else 400). Rare: only these
				// lines have their value read.
				otherCoding = otherCoding || !bytes.EqualFold(bytes.Trim(line[len(transferEncodingName)+1:], " \t\r"), chunkedValue)
			}
		}
	}
	switch {
	case lengths > 1:
		return "the request has more than one Content-Length header; send exactly one"
	case lengths > 0 && codings > 0:
		return "the request has both Content-Length and Transfer-Encoding; send one of them"
	case codings > 1 || otherCoding:
		return "the request's Transfer-Encoding is not exactly chunked; send one Transfer-Encoding: chunked, or a Content-Length"
	case hosts > 1:
		return "the request has more than one Host header; send exactly one"
	}
	return ""
}

// named reports whether a header line is a field called name (fasthttp
// refuses a space before the colon, so the colon follows the name).
func named(line, name []byte) bool {
	return len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], name)
}

// checkFraming refuses a request whose framing or target is ambiguous
// (see framingMessage) with 400, and closes the connection after the
// answer: whatever follows on it cannot be trusted to be a request.
func checkFraming(c *fiber.Ctx) error {
	msg := framingMessage(c.Request().Header.RawHeaders())
	if msg == "" {
		return nil
	}
	c.Context().SetConnectionClose()
	return apierror.Invalid("%s", msg)
}
