// Package indexer follows the Prova program on a Solana RPC node (backfill,
// then a live logs subscription with polling as a fallback) and writes its
// events into PostgreSQL through store.Apply; it also promotes rows to
// finalized and removes rows of transactions a fork dropped.
//
// Invariants: of any number of indexer processes, only the holder of a
// PostgreSQL advisory lock writes; every batch is applied with the
// checkpoint in one transaction, so a crash leaves no gap and a replay adds
// nothing twice.
package indexer
