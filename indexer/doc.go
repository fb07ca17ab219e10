// Package indexer follows the Prova program on a Solana RPC node and writes
// its events into Postgres exactly once, through store.Apply.
//
// One writer: of any number of indexer processes, the one holding a
// session-level Postgres advisory lock (on a dedicated connection) indexes;
// the others wait and take over within seconds when it dies, resuming from
// the checkpoint. The leader
//
//   - syncs: lists the program's signatures newer than the checkpoint with
//     getSignaturesForAddress (before/until paging, confirmed), fetches the
//     transactions with getTransaction (base64, maxSupportedTransactionVersion
//     0) with bounded concurrency, skips failed ones, decodes only the
//     program's own events (prova.ParseLogs), derives attestation pdas,
//     checks agent signatures, and applies oldest-first chunks with the
//     checkpoint in the same database transaction, so a crash never leaves a
//     gap and a replay never duplicates;
//   - follows the chain live: a logsSubscribe (mentions the program,
//     confirmed) notification triggers a sync (the transaction is re-fetched
//     before indexing); every reconnect triggers a sync that backfills the
//     gap; when the websocket fails it polls;
//   - promotes confirmed rows to finalized (getSignatureStatuses) and removes
//     rows of transactions that a fork dropped.
//
// Status (for /health) is stored in Postgres as checkpoints, so API
// processes read it with StatusReader. Prometheus metrics go to the
// configured Registerer; long backfills log progress lines.
package indexer
