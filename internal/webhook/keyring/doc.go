// Package keyring seals webhook signing secrets at rest with AES-256-GCM
// under keys that come from the environment, and supports rotating them:
// a keyring holds several named keys, the first seals, any of them opens.
//
// Invariants: a sealed secret is bound to its webhook (the webhook id is
// the additional authenticated data), so a sealed value copied to another
// row does not open; a key's material never appears in an error or a log.
package keyring
