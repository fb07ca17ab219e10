// Package indexer follows the Prova program on a Solana RPC node (backfill,
// then a live logs subscription with polling as a fallback) and writes its
// events into PostgreSQL through store.Apply; it also promotes rows to
// finalized, removes rows of transactions a fork dropped, retries listed
// transactions the RPC node does not return yet, and reconciles recent
// slots with the store to repair any gap.
//
// Invariants: of any number of indexer processes, only the holder of a
// PostgreSQL advisory lock writes; every batch is applied with the
// checkpoint in one transaction, and the checkpoint never passes a listed
// transaction that is still pending (until its retry time is up), so a
// crash leaves no gap and a replay adds nothing twice.
package indexer
