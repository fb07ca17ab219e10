// Package x402 provides the x402 v2 payment protocol for Solana's `exact`
// scheme, as both sides speak it: the wire types and the base64 header
// codec (PAYMENT-REQUIRED, PAYMENT-SIGNATURE, PAYMENT-RESPONSE and the v1
// X-PAYMENT), a bounded decoder of Solana wire transactions, the checks
// every `exact` payment must pass (CheckExact), and a payer that builds and
// signs a payment the way the reference wallets do (BuildExact).
//
// Invariants: every input is bounded before it is decoded (a header before
// base64, a transaction before any count in it is trusted), and decoding
// never panics; a payment is checked against the requirements the server
// built, never against the client's echo of them. The server side
// (verification against the chain, settlement, replay guard, ledger) is
// package x402/verifier; the Fiber middleware is x402/x402fiber.
package x402
