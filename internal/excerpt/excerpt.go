// Package excerpt shortens a value a client sent (or a server answered) for
// an error message or a log line: bounded, cut on a character boundary, and
// valid UTF-8 whatever the input.
package excerpt

import (
	"strings"
	"unicode/utf8"
)

// Of returns s when it is at most n bytes, and otherwise its longest
// prefix of at most n bytes that ends on a character boundary, followed by
// "...". Invalid UTF-8 in what is kept becomes "?".
func Of(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return strings.ToValidUTF8(s, "?")
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 {
		cut = n // no boundary within n: cut inside, made valid below
	}
	return strings.ToValidUTF8(s[:cut], "?") + "..."
}
