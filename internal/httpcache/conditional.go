package httpcache

// MaxIfNoneMatch bounds the If-None-Match bytes read (all field lines
// together). A field longer than this is ignored: the full answer is
// always a correct answer to a conditional request, so a bound never
// makes a wrong 304, only a 200 a client could have been spared.
const MaxIfNoneMatch = 8 << 10

// NoneMatch evaluates If-None-Match (RFC 9110 13.1.2) for a GET or HEAD
// whose selected representation has the strong entity tag etag (quoted,
// "…"): it reports true, meaning "answer 304 Not Modified", when the field
// is "*" or lists a tag equal to etag by weak comparison (W/"x" matches
// "x"). lines are the field's lines as received (several lines form one
// comma-separated list). No field, an empty one, a malformed one (an
// unquoted tag, "*" among tags, junk between elements) and one longer
// than MaxIfNoneMatch report false. It does not allocate.
func NoneMatch(lines [][]byte, etag []byte) bool {
	total := 0
	for _, l := range lines {
		total += len(l)
	}
	if total == 0 || total > MaxIfNoneMatch {
		return false
	}
	elements, star, matched := 0, false, false
	for _, l := range lines {
		for i := 0; ; {
			i = skipListSeparators(l, i)
			if i == len(l) {
				break
			}
			elements++
			if l[i] == '*' {
				star = true
				i++
			} else {
				start, end, ok := entityTag(l, i)
				if !ok {
					return false
				}
				if string(l[start:end]) == string(etag) { // no allocation: compiled to a comparison
					matched = true
				}
				i = end
			}
			// After an element: optional whitespace, then a comma or the end.
			for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
				i++
			}
			if i < len(l) && l[i] != ',' {
				return false
			}
		}
	}
	if star {
		return elements == 1 // "*" alone; with tags beside it the field is malformed
	}
	return matched
}

// skipListSeparators skips whitespace and commas (empty list elements
// are allowed and ignored, RFC 9110 5.6.1.2).
func skipListSeparators(l []byte, i int) int {
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == ',') {
		i++
	}
	return i
}

// entityTag reads entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE at l[i:] and
// returns the bounds of its opaque-tag (quotes included), for weak
// comparison.
func entityTag(l []byte, i int) (start, end int, ok bool) {
	if i+1 < len(l) && l[i] == 'W' && l[i+1] == '/' {
		i += 2
	}
	if i >= len(l) || l[i] != '"' {
		return 0, 0, false
	}
	start = i
	for i++; i < len(l); i++ {
		switch c := l[i]; {
		case c == '"':
			return start, i + 1, true
		case c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80: // etagc, obs-text included
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}
