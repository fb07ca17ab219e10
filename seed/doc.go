// Package seed generates realistic demo data and writes it through the
// store's one write path: agents with real Ed25519 keys, attestations of all
// seven action types spread over the last 90 days, each signed by its agent
// over the SHA-256 of a generated action payload, some in privacy mode, some
// agents revoked or with policy updates. Seeded records are finalized.
package seed
