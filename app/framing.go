package app

import (
	"bytes"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
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
	carriageReturn       = []byte{'\r'}
)

// framingMessage says what is ambiguous or invalid in a request's header
// block, or "". raw is the block as sent, after the request line (fasthttp
// keeps a copy of it: its parsed headers hold only one Host and one
// Content-Length, and none of the bytes it tolerates); http11 is whether
// the request line said HTTP/1.1. It refuses, besides the framing above:
//   - a NUL or a CR that does not end a line, anywhere in the block: RFC
//     9110 section 5.5 calls both invalid and dangerous in a field value
//     (fasthttp keeps them; a proxy may cut the line there, or end it);
//   - a line starting with a space or a tab (obsolete line folding, RFC
//     9112 section 5.2: fasthttp joins it to the header above, a proxy may
//     read it as a header of its own);
//   - an HTTP/1.1 request without Host (RFC 9112 section 3.2).
//
// It runs on every request, allocating nothing: the byte checks are two
// vectorised passes over the block, the rest looks at each line's first
// letter.
func framingMessage(raw []byte, http11 bool) string {
	if bytes.IndexByte(raw, 0) >= 0 {
		return "a request header contains a NUL byte"
	}
	var hosts, lengths, codings, lineEnds int
	otherCoding, folded := false, false // otherCoding: a Transfer-Encoding other than exactly chunked
	for rest := raw; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
			if i > 0 && line[i-1] == '\r' {
				lineEnds++ // a CR that ends its line
			}
		} else {
			rest = nil
		}
		if len(line) == 0 {
			continue
		}
		// The first letter first: most lines are none of these.
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
		case ' ', '\t' | 0x20:
			folded = folded || line[0] == ' ' || line[0] == '\t'
		}
	}
	switch {
	case bytes.Count(raw, carriageReturn) != lineEnds:
		return "a request header contains a CR that does not end its line"
	case folded:
		return "a request header line starts with a space or a tab (obsolete line folding); send each header on one line"
	case lengths > 1:
		return "the request has more than one Content-Length header; send exactly one"
	case lengths > 0 && codings > 0:
		return "the request has both Content-Length and Transfer-Encoding; send one of them"
	case codings > 1 || otherCoding:
		return "the request's Transfer-Encoding is not exactly chunked; send one Transfer-Encoding: chunked, or a Content-Length"
	case hosts > 1:
		return "the request has more than one Host header; send exactly one"
	case hosts == 0 && http11:
		return "an HTTP/1.1 request needs a Host header"
	}
	return ""
}

// named reports whether a header line is a field called name (fasthttp
// refuses a space before the colon, so the colon follows the name).
func named(line, name []byte) bool {
	return len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], name)
}

// headerReceived runs as soon as fasthttp has parsed a request's headers,
// before it reads any body (fasthttp.Server.HeaderReceived). A request
// framingMessage refuses gets no body read: whatever follows its headers
// on the connection is not trusted to be one (a body whose length the
// headers disagree on, a smuggled request), and a client that withholds
// the body it announced is answered at once, not at the read timeout. Its
// Content-Length becomes 0 (no body is read), its Expect is dropped (no
// 100 Continue invites one) and it is marked Connection: close, which
// sends it past checkFraming's quick test to the refusal. The check runs
// once per request here; checkFraming repeats it only for requests marked
// so (those and the few that ask to close).
func headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if framingMessage(h.RawHeaders(), h.IsHTTP11()) != "" {
		h.SetContentLength(0)
		h.Del(fiber.HeaderExpect)
		h.SetConnectionClose()
	}
	return fasthttp.RequestConfig{} // the server's own limits and timeouts
}

// checkFraming refuses a request whose framing or header block is
// ambiguous or invalid (see framingMessage) with 400, and closes the
// connection after the answer: whatever follows on it cannot be trusted
// to be a request. headerReceived marked every such request to close.
func checkFraming(c *fiber.Ctx) error {
	h := &c.Request().Header
	if !h.ConnectionClose() {
		return nil
	}
	msg := framingMessage(h.RawHeaders(), h.IsHTTP11())
	if msg == "" {
		return nil
	}
	c.Context().SetConnectionClose()
	return apierror.Invalid("%s", msg)
}
