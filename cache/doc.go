// Package cache is the read-through cache in front of Postgres. It has two
// layers: an in-process map on each node and Redis shared by all nodes.
//
// Values are of two kinds. Immutable values (finalized attestations) are
// cached long in both layers. Indexed values (lists, stats, agent views,
// anything a new attestation can change) are keyed by the index epoch, a
// Redis counter that the write path bumps after every commit and announces
// over pub/sub; each node keeps the current epoch in memory, so a hit costs
// no Redis round trip and a write is visible on every node as soon as the
// announcement arrives (a one-second poll backs the subscription up).
//
// Concurrent misses of one key on a node make one load (singleflight). When
// Redis fails, the cache marks it down, serves immutable values from memory,
// loads everything else from Postgres, and reports itself degraded until a
// poll succeeds again.
package cache
