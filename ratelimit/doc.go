// Package ratelimit limits requests per client IP with a true sliding
// window shared by every node through Redis (one sorted set per client,
// decided by a Lua script on the Redis server's clock), batching the
// decisions of concurrent requests into few round trips. The client IP
// comes from trusted proxies only.
//
// Invariants: no client gets more than Limit accepted requests in any
// Window, and a client under that is never refused. When Redis fails, the
// node decides with its own in-memory window (never unlimited, never
// refusing everyone) and reports Degraded until Redis answers again.
package ratelimit
