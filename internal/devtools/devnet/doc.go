// Package devnet provides a local Solana chain simulator: a JSON-RPC node
// and PubSub websocket (port+1) that solana-go's clients use unmodified. It
// executes real signed transactions (the Prova program with its Ed25519
// precompile, System, SPL Token, associated token accounts, Memo, Compute
// Budget), produces traffic, and injects scripted faults through its
// devnet_* methods (admin.go; each has a Chain method of the same purpose):
// generate traffic, land a failed transaction or a foreign program's fake
// event, drop an unfinalized transaction (a fork), drop websocket
// connections, deliver notifications twice, revoke an agent, advance
// slots, make getTransaction answer null for a listed transaction for some
// calls or some time (a lagging node behind a load balancer:
// devnet_hideTransaction), and add a transaction to an earlier unfinalized
// slot (a confirmed-level fork: devnet_insertTransaction). Tests read its
// ground truth to compare with what attestd stored.
//
// Funding for local payments (dev only): the simulator holds Circle's
// devnet USDC mint (4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU, 6
// decimals), so x402 clients that know solana-devnet pay with it.
// devnet_fund [address, {"lamports": n, "usdc": n}] sends SOL from the
// faucet in a real transfer and mints USDC into the address's associated
// token account, creating it (defaults: 1 SOL, 100 USDC); `attestd devnet
// --fund ADDRESS` does the same at start.
//
// Deliberate simplifications: one validator, no vote transactions, no
// address lookup tables, no packet-size limit.
package devnet
