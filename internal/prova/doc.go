// Package prova provides the wire format of the on-chain Prova program
// (Anchor): discriminators, borsh layouts of its instructions, events and
// agent account, instruction builders (with the Ed25519 precompile that
// precedes record_attestations), and ParseLogs, which follows a
// transaction's invoke stack and returns only the events the program itself
// emitted. It does no I/O, and its decoders return errors on any input,
// never panic.
package prova
