// Package premium provides the premium routes: an agent's full history, the
// forensic report (aggregates in SQL, anomalies by configurable rules,
// sealed by a reportHash over its RFC 8785 form) and bulk verification.
// The caller puts its authentication middleware in front of them.
//
// Invariants: a cached report is answered byte for byte, so it still
// verifies; "valid" in a bulk verification is never taken from a stored
// flag alone: the signature is re-checked unless the bytes are provably the
// ones verified at ingest.
package premium
