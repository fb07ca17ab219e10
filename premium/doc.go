// Package premium serves the premium routes of attestd, each behind the
// API-key middleware (package apikey):
//
//   - GET /premium/full-history/:agentId: the agent's attestations, newest
//     first, up to 1000 per page (limit default 1000, max 1000; offset;
//     cursor; from/to as on GET /attestations), with the agent record and
//     pagination. Cached per index epoch.
//   - GET /premium/forensic-report/:agentId: a structured audit report of
//     the agent over [from, to): totals, per-type counts, a per-day
//     timeline, integrity (ingest-time signature results plus a re-check of
//     the newest signatures), anomalies and the policy history, sealed with
//     reportHash = hex SHA-256 of the RFC 8785 canonical JSON of the report
//     without reportHash. Aggregates are computed in SQL in one scan (plus
//     one concurrent scan for duplicate hashes). Reports are cached per
//     index epoch and the cached bytes are answered as they are, so a cached
//     report keeps its generatedAt and still verifies.
//   - POST /premium/bulk-verify: {"ids": [...]} with 1 to 1000 attestation
//     pdas, answered in request order (duplicates per position) from one
//     Postgres round trip. valid means indexed, finalized, and the agent's
//     Ed25519 signature over the action hash verifies: it is re-checked from
//     the stored key, hash and signature, never taken from the stored flag.
//
// # Anomalies
//
// Rules (ConfigFromEnv; echoed in every report as thresholds):
//
//   - burst: a UTC calendar minute with at least BurstPerMinute (500)
//     attestations; a transaction carries at most 100.
//   - long_gap: consecutive attestations at least LongGapSeconds (24 h)
//     apart; the anomaly spans the silence.
//   - after_revocation: an attestation at or after the agent's revocation
//     time (in a later slot when at the same second).
//   - duplicate_hash: an action hash the agent attested more than once in
//     the period; up to 10 pdas are named, oldest first.
//   - invalid_signature: an attestation whose signature failed at ingest, or
//     that passed then but fails the re-check now (the record changed).
//
// Each kind lists at most MaxAnomaliesPerKind (100) entries, oldest first;
// summary.anomalyCounts counts them all.
//
// # Signature checks
//
// Verification runs on every core. Its results are memoised in process,
// keyed by the SHA-256 of (agent key, action hash, signature): verification
// is a pure function of those bytes, so a changed record is verified
// afresh, while repeated checks of unchanged records cost a hash.
package premium
