// Package prova is the wire format of the on-chain Prova attestation program
// (Anchor 0.31, IDL in /work/shared/reference/prova-idl.json). It has no I/O.
//
// It provides:
//   - the IDL's 8-byte discriminators of instructions, events and accounts;
//   - borsh encoding and decoding of the four instructions (register_agent,
//     record_attestations, revoke_agent, update_policy_root), the four events
//     (AgentRegistered, AttestationIssued, AgentRevokedEvent,
//     PolicyRootUpdated) and the AgentAccount;
//   - builders of solana-go instructions with the IDL's accounts, and of the
//     Ed25519 SigVerify precompile instruction that precedes
//     record_attestations, plus its parser and verifier;
//   - ParseLogs, which follows a transaction's invoke stack in its log
//     messages and returns only the events the program itself emitted, with
//     their event index.
//
// Decoders never panic on garbage: they return errors.
package prova
