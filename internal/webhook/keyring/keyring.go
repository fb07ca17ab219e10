package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySize is the size of a key's material: AES-256.
const KeySize = 32

// version is the first byte of every sealed value (its format).
const version = 1

var keyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

type key struct {
	id   string
	aead cipher.AEAD
}

// Keyring is a list of named keys; the first one seals. It is safe for
// concurrent use.
type Keyring struct {
	keys []key
}

// Errors of Open.
var (
	ErrUnknownKey = errors.New("sealed with a key that is not in the keyring")
	ErrOpen       = errors.New("sealed value does not open (wrong key, another webhook's value, or corrupted)")
)

// Parse reads a keyring from its environment form: comma-separated
// "id:base64" entries, newest first, where id is 1-32 letters, digits, '_'
// or '-' and base64 (standard or URL alphabet, padding optional) holds
// exactly 32 bytes. Messages never quote key material.
func Parse(spec string) (*Keyring, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("no keys: want id:base64(32 bytes)[,id:base64...], newest first")
	}
	if len(spec) > 64<<10 {
		return nil, errors.New("key list longer than 64 KiB")
	}
	k := &Keyring{}
	seen := map[string]bool{}
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		id, material, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("key %d: want id:base64, found no ':'", i+1)
		}
		if !keyID.MatchString(id) {
			return nil, fmt.Errorf("key %d: id must be 1-32 letters, digits, '_' or '-'", i+1)
		}
		if seen[id] {
			return nil, fmt.Errorf("key %d: id %s listed twice", i+1, id)
		}
		seen[id] = true
		raw, err := decode(material)
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("key %s: want %d bytes in base64 (openssl rand -base64 32)", id, KeySize)
		}
		kk, err := newKey(id, raw)
		if err != nil {
			return nil, err
		}
		k.keys = append(k.keys, kk)
	}
	return k, nil
}

func decode(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func newKey(id string, raw []byte) (key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, fmt.Errorf("key %s: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("key %s: %w", id, err)
	}
	return key{id: id, aead: aead}, nil
}

// Generate returns a new random key in the environment form, named id.
func Generate(id string) (string, error) {
	if !keyID.MatchString(id) {
		return "", fmt.Errorf("key id %q: want 1-32 letters, digits, '_' or '-'", id)
	}
	var raw [KeySize]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return id + ":" + base64.StdEncoding.EncodeToString(raw[:]), nil
}

// Primary is the id of the key that seals.
func (k *Keyring) Primary() string { return k.keys[0].id }

// IDs lists the keys' ids, newest first.
func (k *Keyring) IDs() []string {
	out := make([]string, len(k.keys))
	for i, kk := range k.keys {
		out[i] = kk.id
	}
	return out
}

// Seal encrypts plaintext under the primary key, bound to aad (the
// webhook id). It returns the sealed value and the id of the key.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, string, error) {
	kk := k.keys[0]
	out := make([]byte, 1+kk.aead.NonceSize(), 1+kk.aead.NonceSize()+len(plaintext)+kk.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, "", fmt.Errorf("seal: nonce: %w", err)
	}
	return kk.aead.Seal(out, out[1:], plaintext, aad), kk.id, nil
}

// Open decrypts a value Seal made with the key keyID for the same aad.
func (k *Keyring) Open(sealed []byte, keyID string, aad []byte) ([]byte, error) {
	for _, kk := range k.keys {
		if kk.id != keyID {
			continue
		}
		ns := kk.aead.NonceSize()
		if len(sealed) < 1+ns+kk.aead.Overhead() || sealed[0] != version {
			return nil, ErrOpen
		}
		out, err := kk.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], aad)
		if err != nil {
			return nil, ErrOpen
		}
		return out, nil
	}
	return nil, fmt.Errorf("key %q: %w", keyID, ErrUnknownKey)
}

// NeedsReseal reports whether a value sealed with keyID should be sealed
// again under the primary key.
func (k *Keyring) NeedsReseal(keyID string) bool { return keyID != k.Primary() }
