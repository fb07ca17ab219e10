// Package verifier provides the server side of x402 pay per request,
// independent of any HTTP framework: the requirements of each payable
// route, verification of a payment (the `exact` checks in process, then
// the chain's word through a simulation or a facilitator's /verify),
// settlement (co-signing as fee payer and confirming, or a facilitator's
// /settle), a replay guard in Redis and the payments ledger in PostgreSQL.
//
// Invariants: one payment (one transaction message) buys at most one
// answer on the whole fleet: it is claimed in Redis with SET NX and in the
// ledger under a unique key before the answer is made, and a claim is only
// given back when nothing was charged. Content is released only after a
// settlement that succeeded, and a payment is settled only once its answer
// is kept (answers.go): presented again, within the answer's retention, it
// gets those bytes on any node, never a new answer.
package verifier
