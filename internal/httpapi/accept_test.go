package httpapi

import "testing"

func TestPrefersType(t *testing.T) {
	const want, fallback = "text/x-tlog-proof", "application/json"
	for _, c := range []struct {
		accept []string
		ok     bool
	}{
		{nil, false},
		{[]string{"text/x-tlog-proof"}, true},
		{[]string{"TEXT/X-TLOG-PROOF"}, true},
		{[]string{"text/x-tlog-proof; charset=utf-8"}, true},
		{[]string{"application/json, text/x-tlog-proof"}, true}, // equal q: the one asked for by name
		{[]string{"text/x-tlog-proof;q=0"}, false},
		{[]string{"text/x-tlog-proof;q=0.000"}, false},
		{[]string{"text/x-tlog-proof;q=0.5, application/json"}, false},
		{[]string{"text/x-tlog-proof;q=0.9, application/json;q=0.8"}, true},
		{[]string{"application/json", "text/x-tlog-proof;q=1"}, true}, // two Accept lines
		{[]string{"*/*"}, false},
		{[]string{"text/*"}, false},
		{[]string{"text/x-tlog-proofs"}, false},
		{[]string{"application/text/x-tlog-proof"}, false},
		{[]string{"text/x-tlog-proof;q=bogus"}, false},
	} {
		lines := make([][]byte, len(c.accept))
		for i, l := range c.accept {
			lines[i] = []byte(l)
		}
		if got := prefersType(lines, []byte(want), []byte(fallback)); got != c.ok {
			t.Errorf("Accept %q: %v, want %v", c.accept, got, c.ok)
		}
	}
}
