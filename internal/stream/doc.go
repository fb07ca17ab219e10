// Package stream serves GET /api/v1/attestations/stream: new attestations,
// finality changes and fork removals as server-sent events, resumable from
// a list cursor (Last-Event-ID or ?after=).
//
// The write path (store) appends every change to the stream log in the
// transaction that makes it, numbered by a counter whose row lock orders
// the commits, so the numbers are gapless in commit order. Each node holds
// one Hub: one Redis subscription (the cache's index-epoch channel, which
// the indexer publishes on after every commit) that only wakes it up, and
// a poll as a safety net; on a wake-up the hub reads the log after the
// last number it holds into a bounded in-memory ring shared by every
// client. A client's position is a log number: it reads the ring after
// it, or PostgreSQL when it is behind the ring (catching up after a
// resume), so a missed announcement delays an event, never loses or
// repeats one.
//
// A stream takes its connection over from the HTTP server (fasthttp's
// hijack), so that no server buffer, write timeout or compression stands
// between an event and the client: each write has its own deadline, and a
// client that does not take its events within it is dropped. The socket's
// send buffer is kept small, and what a stream holds in memory for its
// client (its write buffer, taken only while it writes, and the rows of a
// catch-up not yet written) comes out of byte budgets, one per stream and
// one per node: a catch-up reads no more than its stream's budget; when
// the node's is full, streams blocked on clients that take nothing are
// ended to make room, and failing that the stream asking ends with a
// resumable error event (STREAM_BUFFER_FULL), its client reconnecting with
// its last id.
package stream
