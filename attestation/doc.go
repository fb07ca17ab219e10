// Package attestation holds the domain of attestd: the attestation and agent
// records the service indexes, the seven action types of the Prova program,
// the derivation of an attestation's address (pda) from its transaction
// signature and event index, and the Ed25519 check of an agent's signature
// over an action hash. It has no I/O: every other package builds on it.
package attestation
