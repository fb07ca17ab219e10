// Package logformat holds the formats of attestd's transparency log
// (docs/log.md) that servers and clients share, with no dependency beyond
// golang.org/x/mod: C2SP tlog-checkpoint bodies (signing, verifying,
// parsing), C2SP tlog-tiles paths and entry bundles. The leaf is
// attestation.LogLeaf; hashing and proofs are golang.org/x/mod/sumdb/tlog.
package logformat
