package verifier

import (
	"crypto/sha256"
	"net/url"
)

// Fingerprint is the SHA-256 of what a request asks for: its method, its
// path, its query in canonical form (parameters sorted by name) and the
// SHA-256 of its body. A settled payment presented again is answered again
// only for a request of the same fingerprint.
func Fingerprint(method, path, rawQuery string, body []byte) []byte {
	q, err := url.ParseQuery(rawQuery)
	canonical := rawQuery
	if err == nil {
		canonical = q.Encode()
	}
	bodyHash := sha256.Sum256(body)
	h := sha256.New()
	for _, part := range []string{method, path, canonical} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(bodyHash[:])
	return h.Sum(nil)
}
