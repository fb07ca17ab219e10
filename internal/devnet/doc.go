// Package devnet provides a local Solana chain simulator: a JSON-RPC node
// and PubSub websocket (port+1) that solana-go's clients use unmodified. It
// executes real signed transactions (the Prova program with its Ed25519
// precompile, System, SPL Token, associated token accounts, Memo, Compute
// Budget), produces traffic, and injects scripted faults through its
// devnet_* methods. Tests read its ground truth to compare with what attestd
// stored.
//
// Deliberate simplifications: one validator, no vote transactions, no
// address lookup tables, no packet-size limit.
package devnet
