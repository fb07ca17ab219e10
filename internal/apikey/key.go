package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"

	"github.com/mr-tron/base58"
)

// Key format: "atst_" followed by 32 random bytes in base58 (32 to 44
// characters; 43 or 44 in practice). The prefix that names a key is the 8
// characters after "atst_".
const (
	KeyPrefix  = "atst_"
	PrefixLen  = 8
	SecretSize = 32
	minKeyLen  = len(KeyPrefix) + 32 // 32 zero bytes encode as 32 '1's
	maxKeyLen  = len(KeyPrefix) + 44
	// Header is the request header that carries the key.
	Header = "x-api-key"
)

// b58 marks the characters of the base58 (Bitcoin) alphabet.
var b58 = func() (t [256]bool) {
	for _, c := range "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz" {
		t[c] = true
	}
	return t
}()

// NewKey is a freshly generated key: the secret to show once, the prefix
// that names it and the SHA-256 that is stored.
type NewKey struct {
	Secret string
	Prefix string
	Hash   [32]byte
}

// Generate makes a key from 32 bytes of crypto/rand.
func Generate() (NewKey, error) {
	var b [SecretSize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return NewKey{}, fmt.Errorf("generate api key: %w", err)
	}
	secret := KeyPrefix + base58.Encode(b[:])
	return NewKey{Secret: secret, Prefix: secret[len(KeyPrefix) : len(KeyPrefix)+PrefixLen], Hash: Hash(secret)}, nil
}

// Hash is what is stored of a key: the SHA-256 of the whole key text.
func Hash(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// Parse checks the syntax of a presented key without any I/O: "atst_" and
// base58 text that decodes to exactly 32 bytes. It returns the key's prefix
// (a substring of key: copy it before keeping it) and its hash.
func Parse(key string) (prefix string, hash [32]byte, ok bool) {
	if len(key) < minKeyLen || len(key) > maxKeyLen || key[:len(KeyPrefix)] != KeyPrefix {
		return "", hash, false
	}
	body := key[len(KeyPrefix):]
	for i := 0; i < len(body); i++ {
		if !b58[body[i]] {
			return "", hash, false
		}
	}
	raw, err := base58.Decode(body)
	if err != nil || len(raw) != SecretSize {
		return "", hash, false
	}
	return body[:PrefixLen], Hash(key), true
}

// ValidPrefix reports whether p can be a key prefix (8 base58 characters).
func ValidPrefix(p string) bool {
	if len(p) != PrefixLen {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !b58[p[i]] {
			return false
		}
	}
	return true
}
