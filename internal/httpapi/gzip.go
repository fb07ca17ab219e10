package httpapi

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// AcceptsGzip reports whether the request's Accept-Encoding (every line
// of it) makes gzip acceptable: listed with a q above 0, or not listed and
// "*" listed with a q above 0. The q parameter's name is case-insensitive;
// a malformed q counts as 0. It reads the request's buffers without
// copying or allocating.
func AcceptsGzip(c *fiber.Ctx) bool {
	return gzipAcceptableLines(c.Request().Header.PeekAll(fiber.HeaderAcceptEncoding))
}

func gzipAcceptable(h string) bool { return gzipAcceptableLines([][]byte{[]byte(h)}) }

func gzipAcceptableLines(lines [][]byte) bool {
	gzipQ, starQ := -1, -1 // thousandths; -1: not listed
	eachQ(lines, func(name []byte, q int) {
		switch {
		case bytes.EqualFold(name, gzipName), bytes.EqualFold(name, xGzipName):
			gzipQ = max(gzipQ, q)
		case len(name) == 1 && name[0] == '*':
			starQ = max(starQ, q)
		}
	})
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// eachQ calls fn with every element of a header list with q-values
// (Accept, Accept-Encoding: "name;param=v;q=0.5, name2"), given as the
// header's lines: its name, trimmed, and its q-value in thousandths (1000
// when it has none). Other parameters are skipped.
func eachQ(lines [][]byte, fn func(name []byte, q int)) {
	for _, line := range lines {
		for more := true; more; {
			var part []byte
			part, line, more = bytes.Cut(line, comma)
			name, params, _ := bytes.Cut(part, semicolon)
			q := 1000
			for len(params) > 0 {
				var p []byte
				p, params, _ = bytes.Cut(params, semicolon)
				if k, v, ok := bytes.Cut(p, equals); ok && bytes.EqualFold(bytes.TrimSpace(k), qName) {
					q = parseQValue(bytes.TrimSpace(v))
				}
			}
			fn(bytes.TrimSpace(name), q)
		}
	}
}

var (
	comma, semicolon, equals = []byte{','}, []byte{';'}, []byte{'='}
	qName, gzipName          = []byte("q"), []byte("gzip")
	xGzipName                = []byte("x-gzip")
)

// parseQValue reads an RFC 9110 qvalue ("0", "0.5", "1.000") in
// thousandths; anything else is 0.
func parseQValue(v []byte) int {
	whole, frac, _ := bytes.Cut(v, []byte{'.'})
	if len(whole) != 1 || (whole[0] != '0' && whole[0] != '1') || len(frac) > 3 {
		return 0
	}
	n := int(whole[0]-'0') * 1000
	for i, scale := 0, 100; i < len(frac); i, scale = i+1, scale/10 {
		if frac[i] < '0' || frac[i] > '9' {
			return 0
		}
		n += int(frac[i]-'0') * scale
	}
	if n > 1000 {
		return 0
	}
	return n
}
