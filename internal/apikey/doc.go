// Package apikey provides API keys: their storage and checking, the
// middleware that admits requests carrying a valid key in x-api-key, and
// the routes through which an account holder manages their keys, and key
// roles (admin keys manage the account, read keys call premium routes only).
//
// Invariants: only a key's SHA-256 and its 8-character prefix are ever
// stored, and a malformed key is refused without a lookup; a revoked key is
// refused by every node within MaxCacheTTL, at once where the revocation
// announcement (Redis pub/sub) arrives; no key acts on a key of a higher
// role.
package apikey
