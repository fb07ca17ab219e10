// Package store is attestd's PostgreSQL layer: the embedded migrations,
// the one write path (Apply: events, counters, the webhook outbox and the
// indexer checkpoint in one idempotent transaction, then an epoch bump),
// commitment promotion and fork removal, and every read the API makes.
//
// Reads that carry a position (AtLeast: a cache epoch) may go to a
// streaming read replica, tracked in the background.
//
// Invariants: every read statement the API runs is an index scan (a test
// checks the plans on a million rows), and every total comes from counters
// the write path keeps in the same transaction as the rows. A read with a
// position never reads a replica that has not replayed it.
package store
