// Package webhook delivers every new event (attestation.created,
// agent.registered, agent.revoked, agent.policy_updated) to the webhooks
// that subscribe to it, signed, retried and logged. It provides the
// Worker that `attestd worker` runs (the /webhooks routes through which an
// account manages its webhooks and reads their delivery log are package
// internal/webhookapi's, which builds on this one): a relay
// from the PostgreSQL outbox to a Redis stream, the fan-out of each event
// to the matching webhooks, and senders that take delivery jobs from
// partitioned Redis streams in a consumer group. Every active webhook gets
// its events, as SPEC.md describes them: requests to one destination host
// are capped across accounts and workers (hostcap.go), at a small rate for
// webhooks whose receiver has not answered the signed webhook.verify
// challenge (verify.go: an opt-in proof, never a precondition of
// delivery) and a larger one for those that did; requests over a cap wait
// their turn in order, each asking once.
//
// Invariants: the outbox and the deliveries in PostgreSQL are the source
// of truth, Redis only carries work, so a worker killed at any point or a
// Redis that lost its data delays deliveries but loses none (at least
// once: receivers deduplicate on webhook-id, the same on every attempt); a
// job is acknowledged only after its attempt is logged.
package webhook
