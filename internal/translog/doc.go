// Package translog is attestd's transparency log (docs/log.md): every
// finalized attestation is one leaf (attestation.LogLeaf) of an
// append-only RFC 6962 Merkle tree kept in PostgreSQL, and checkpoints of
// the tree are signed notes (C2SP tlog-checkpoint, Ed25519) that anyone
// holding the verifier key can check.
//
// The Appender runs beside the indexer (attestd index): one at a time
// fleet-wide, by a PostgreSQL advisory lock of its own, it moves finalized
// attestations from the log's queue into the tree and signs a checkpoint
// at most every CheckpointInterval while the tree grows. The Server adds
// the public routes: the checkpoint, the tiles (C2SP tlog-tiles), the
// verifier key, inclusion proofs per attestation and consistency proofs.
//
// Invariants: a leaf is appended in the transaction that takes its
// attestation off the queue, and the queue row is written in the
// transaction that makes the attestation finalized (store migration
// 0013), so no leaf is lost or doubled by a crash or a change of
// appender; a confirmed attestation never gets a leaf.
package translog
