package webhook

import (
	"strings"
	"unicode/utf8"
)

// cleanSnippet keeps the printable, valid UTF-8 start of a response.
func cleanSnippet(b []byte) string { return cleanText(string(b), snippetBytes) }

// cleanText makes s storable and readable: valid UTF-8, no control
// characters but newlines and tabs, at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
