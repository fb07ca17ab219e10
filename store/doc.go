// Package store is attestd's PostgreSQL layer: the embedded migrations,
// the one write path (Apply: events, counters, the webhook outbox and the
// indexer checkpoint in one idempotent transaction, then an epoch bump),
// commitment promotion and fork removal, and every read the API makes.
//
// Invariant: every read statement the API runs is an index scan (a test
// checks the plans on a million rows).
package store
