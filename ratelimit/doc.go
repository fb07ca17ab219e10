// Package ratelimit limits requests per client IP with a true sliding
// window shared by every attestd node through Redis: a client never gets
// more than Limit accepted requests in any Window, and a client that stays
// under that is never refused.
//
// # How a decision is made
//
// Each client has one Redis sorted set (one key, so it works on Redis
// Cluster) holding the times of its accepted requests. One Lua script,
// on the Redis server's clock, drops the times that left the window,
// counts the rest and adds the request only when it is accepted, so
// refused requests do not prolong the wait. The oldest time gives
// RateLimit-Reset and Retry-After.
//
// Decisions of concurrent requests are batched: a few sender goroutines
// (Config.Pipelines) each take the next waiting decision at once, plus
// whatever queued while their previous round trip was in flight, and send
// them as one pipeline of EVALSHA calls. A lone request is sent at once;
// under load one round trip carries many decisions.
//
// # Client IP
//
// IPResolver takes the socket peer, or, when the peer is a trusted proxy,
// the client named by X-Forwarded-For (walked from the right, skipping
// trusted proxies) or X-Real-IP. IPv6 clients are limited per /64
// (ClientKey).
//
// # Redis unavailable
//
// When a round trip fails or exceeds Config.Timeout, the node switches to
// its own in-memory sliding window (same rule, this node's requests only;
// it starts from the requests this node admitted recently, which it
// records while Redis is healthy), logs once, sets the
// attestd_ratelimit_fallback_active gauge and reports Degraded. A prober
// switches back when Redis answers; for one window afterwards a client
// still over the limit in the local window stays refused, since Redis never
// saw the requests admitted during the outage. Limiting is never switched
// off and never refuses everyone. During an outage the fleet as a whole
// admits up to Limit per node.
//
// # Configuration
//
// ConfigFromEnv reads ATTESTD_RATE_LIMIT (default 100; 0 disables
// limiting, for benchmarks only), ATTESTD_RATE_WINDOW (default 60s),
// ATTESTD_RATE_ALLOWLIST, ATTESTD_TRUSTED_PROXIES and ATTESTD_PROXY_HEADER
// (default X-Forwarded-For).
//
// # Wiring
//
//	cfg, err := ratelimit.ConfigFromEnv(os.Getenv)
//	lim, err := ratelimit.New(rdb, cfg, prometheus.DefaultRegisterer, logger)
//	defer lim.Close()
//	app.Use(lim.Middleware())       // before the routes
//	health: lim.Degraded()
package ratelimit
