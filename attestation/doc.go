// Package attestation provides the domain types of attestd (attestation and
// agent records, the seven action types), the derivation of an
// attestation's pda from its transaction and event index, and the Ed25519
// check of an agent's signature over an action hash. It does no I/O.
package attestation
