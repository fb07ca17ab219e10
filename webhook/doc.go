// Package webhook delivers every new event (attestation.created,
// agent.registered, agent.revoked, agent.policy_updated) to the webhooks
// that subscribe to it, signed, retried and logged. It provides the
// /webhooks routes through which an account manages its webhooks and reads
// their delivery log, and the Worker that `attestd worker` runs: a relay
// from the PostgreSQL outbox to a Redis stream, the fan-out of each event
// to the matching webhooks, and senders that take delivery jobs from
// partitioned Redis streams in a consumer group. Workers also verify
// endpoints: a new or changed URL gets deliveries only once its receiver
// answered a signed webhook.verify challenge (verify.go); and requests to
// one destination host are capped across accounts and workers.
//
// Invariants: the outbox and the deliveries in PostgreSQL are the source
// of truth, Redis only carries work, so a worker killed at any point or a
// Redis that lost its data delays deliveries but loses none (at least
// once: receivers deduplicate on webhook-id, the same on every attempt); a
// job is acknowledged only after its attempt is logged.
package webhook
