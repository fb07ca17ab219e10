// Package store is attestd's PostgreSQL layer: the embedded schema and its
// migrations, the one write path that every producer of data uses (Apply:
// agents, agent events, attestations, per-type counters, the webhook outbox
// and the indexer checkpoint in one idempotent transaction, then a cache
// epoch bump), commitment promotion and fork removal, and the read queries
// behind the public API. Every read the API makes is an index scan.
package store
