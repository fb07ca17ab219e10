package verifier

import (
	"bytes"
	"testing"
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := Fingerprint("GET", "/api/v1/premium/full-history/A", "limit=5&from=2026-01-01", nil)
	cases := []struct {
		name            string
		method, path, q string
		body            []byte
		same            bool
	}{
		{"parameters reordered", "GET", "/api/v1/premium/full-history/A", "from=2026-01-01&limit=5", nil, true},
		{"another value", "GET", "/api/v1/premium/full-history/A", "limit=6&from=2026-01-01", nil, false},
		{"another path", "GET", "/api/v1/premium/full-history/B", "limit=5&from=2026-01-01", nil, false},
		{"another method", "POST", "/api/v1/premium/full-history/A", "limit=5&from=2026-01-01", nil, false},
		{"a body", "GET", "/api/v1/premium/full-history/A", "limit=5&from=2026-01-01", []byte("{}"), false},
		{"no query", "GET", "/api/v1/premium/full-history/A", "", nil, false},
	}
	for _, tc := range cases {
		got := Fingerprint(tc.method, tc.path, tc.q, tc.body)
		if len(got) != 32 || bytes.Equal(got, base) != tc.same {
			t.Errorf("%s: same=%v, want %v", tc.name, bytes.Equal(got, base), tc.same)
		}
	}
}
