// Package x402fiber is the thin Fiber middleware that puts an x402
// verifier in front of payable routes: a request without a payment gets
// 402 with the payment instructions (PAYMENT-REQUIRED header and the same
// fields in the body beside the error envelope); a verified payment runs
// the route, which is settled only when it answered below 400, and whose
// answer leaves only after a successful settlement, with PAYMENT-RESPONSE.
//
// Invariant: an answer that was not paid for never leaves, whatever fails
// (the handler, the settlement, the ledger).
package x402fiber
