// Package receipt signs and verifies x402 payment receipts as the
// offer-and-receipt extension defines them (format "jws"): a JWS compact
// serialization, EdDSA over Ed25519, whose payload is the RFC 8785 (JCS)
// canonical JSON of the receipt fields, under the operator's receipt key.
// The key is published as a JWKS (/.well-known/jwks.json) and a did:web
// document (/.well-known/did.json); the JWS header's kid is the key's
// did:web URL, so verifiers that resolve did:web and those that read the
// JWKS find the same key.
//
// Besides the extension's fields (version, network, resourceUrl, payer,
// issuedAt, transaction) a receipt carries what was bought: amount, asset,
// payTo, requestDigest (the SHA-256 fingerprint of the request: method,
// path, canonical query, body digest) and responseDigest (the SHA-256 of
// the answer body as first delivered).
//
// Invariants: a receipt is verified only with a key named by its kid and
// published by the signer; parsing is bounded (a receipt over MaxLength is
// refused before decoding) and never panics.
package receipt
