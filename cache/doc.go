// Package cache provides the read-through cache in front of PostgreSQL: an
// in-process layer on each node, then Redis shared by all nodes.
//
// Immutable values (finalized attestations) are kept long. Everything else
// is keyed by the index epoch, which the write path bumps after each commit
// and announces over pub/sub; a node that hears the announcement moves to
// fresh keys, so a write is visible everywhere without a Redis round trip
// per read. Concurrent misses of a key make one load per node. When Redis
// fails, reads go to PostgreSQL and Degraded reports it.
//
// The epoch is at least the WAL position of the commits it announces, and
// a load for an epoch carries it (store.AtLeast), so no read replica that
// lacks those commits answers it: nothing older than the commit that made
// an epoch is cached under it.
//
// A cached value holds its JSON, its gzip form when large, the strong
// entity tag of each (computed once, when cached) and whether it can never
// change, so nodes answer conditional requests without touching the body.
// Writers can hear each epoch they set (Options.Bumped: the edge purge
// hook).
package cache
