// Package apikey is the API-key layer of attestd: accounts' keys, the
// middleware that admits requests carrying a valid key in x-api-key, and the
// account holder's routes POST /keys, GET /keys and DELETE /keys/:prefix.
//
// # Keys
//
// A key is "atst_" followed by 32 bytes of crypto/rand in base58. It is
// shown once, when made; only its SHA-256 and its prefix (the 8 characters
// after "atst_", unique, used to name the key) are stored, with a label,
// the creation time, the last-use time and the revocation time.
//
// # Checking a key
//
// Service.Require rejects a missing, malformed, unknown or revoked key with
// 401 UNAUTHORIZED. A malformed key (wrong text prefix, length or alphabet,
// or not 32 bytes) is refused without any lookup. A well-formed key is
// looked up by prefix and its SHA-256 compared with the stored one in
// constant time. Lookups, including "no such prefix", are cached in process
// for CacheTTL (default 4 s, never more than 5 s).
//
// # Revocation reaches every node within 5 s
//
// Revoking (and creating) a key publishes its prefix on the Redis channel
// <ATTESTD_REDIS_PREFIX>apikey:invalidate; every serving node subscribes and
// drops its cached lookup at once. A node that loses the subscription drops
// all its lookups when it resubscribes, and a lookup that was in flight when
// an invalidation arrived is not cached. If Redis is down, the TTL alone
// bounds the delay: no node trusts a lookup older than CacheTTL.
//
// # Last use
//
// A successful check records the key's last-use time in memory; a writer
// flushes the set with one UPDATE every TouchInterval (default 5 s) and at
// Close, so a request never waits for a database write and last-used times
// lag by up to that interval.
//
// # Pay-per-request seam
//
// RequireOptions.OnMissingKey handles requests without any key. The premium
// routes pass the x402 handler there once payments exist: it can answer 402
// or verify a payment and call c.Next(). Without it, a missing key is 401.
//
// # Configuration
//
// ConfigFromEnv reads ATTESTD_KEY_CACHE_TTL, ATTESTD_KEY_TOUCH_INTERVAL and
// ATTESTD_KEY_MAX_ACTIVE. Keys are created for operators with
// `attestd keys create --account NAME`, then by account holders with
// POST /keys.
package apikey
