// Package devnet is a local Solana chain simulator for attestd: a
// JSON-RPC 2.0 node (HTTP) and PubSub websocket (port+1, Solana's
// convention) that solana-go's rpc and rpc/ws clients use unmodified, as
// they would a real node.
//
// It keeps a ledger of real transactions (built, signed and serialised with
// solana-go; signatures verified on submission) and accounts, and executes
// the instructions attestd meets: the Prova program (register_agent,
// record_attestations preceded by the Ed25519 SigVerify precompile,
// revoke_agent, update_policy_root) writing AgentAccount PDAs and Anchor's
// logs; System transfers; SPL Token Transfer/TransferChecked, the
// associated-token-account program, Memo and ComputeBudget, for x402
// payments. Slots advance on a timer; a transaction is confirmed when it
// lands and finalized FinalityDepth slots later.
//
// It generates traffic (agents, batches of attestations over SHA-256 hashes
// of JSON payloads, signed by each agent's Ed25519 key) and injects faults
// for tests: failed transactions, event-looking logs from another program,
// forks that drop confirmed transactions, dropped websockets, duplicate
// notifications, revocations and policy updates. Tests start it with Start
// and read the ground truth with Events.
//
// Deliberate simplifications: one validator, no vote transactions, no
// address lookup tables, no packet-size limit (a 100-attestation
// record_attestations is larger than Solana's 1232-byte packet), and logs
// are not truncated unless Config.LogLimit is set (`attestd devnet` sets the
// runtime's 10,000 bytes, which truncates batches of more than ~35).
package devnet
