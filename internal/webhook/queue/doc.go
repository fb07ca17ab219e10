// Package queue is the Redis side of webhook delivery: the event stream a
// relay fills from the outbox and fan-out consumers read, and the delivery
// jobs, split over partitions, each a stream read by a consumer group, a
// hash of job records and a sorted set of retries by due time.
//
// Invariants: every key of a partition carries the same hash tag, so each
// multi-key script runs on one Redis Cluster slot; a job record exists in
// Redis from the moment a job is queued until its delivery is settled, so
// a pending delivery without a record is one the queue lost (Redis
// restarted without its data, or was flushed) and can be queued again.
package queue
