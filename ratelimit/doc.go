// Package ratelimit limits requests per client IP with a true sliding
// window shared by every attestd node through Redis: a client never gets
// more than Limit accepted requests in any Window, and a client that stays
// under that is never refused.
//
// # How a decision is made
//
// Each client has one Redis sorted set (one key per client, so it works on
// Redis Cluster) holding the times of its accepted requests. A Lua script,
// on the Redis server's clock (TIME), drops the times that left the
// window, counts the rest, and adds the request (a unique member) only
// when it is accepted, so refused requests do not prolong the wait. The
// oldest time gives RateLimit-Reset and Retry-After. The key expires two
// windows after its oldest member, which covers every member still in the
// window.
//
// Decisions of concurrent requests are batched: a few sender goroutines
// (Config.Pipelines) each take the next waiting decision at once, plus
// whatever queued while their previous round trip was in flight (up to
// Config.MaxBatch), and decide them in one round trip. A lone request is
// sent at once. On a plain *redis.Client (every key on one server) a batch
// is one EVALSHA over all its keys; on a *redis.ClusterClient, with
// Config.SingleKeyScripts, or when the server refuses a cross-slot script,
// it is a pipeline of single-key EVALSHA calls. NOSCRIPT is answered by
// EVAL in the same decision.
//
// # Client IP
//
// IPResolver takes the socket peer, or, when the peer is a trusted proxy,
// the client named by X-Forwarded-For (walked from the right, skipping
// trusted proxies) or X-Real-IP. IPv6 clients are limited per /64
// (ClientKey). Export both to log the client the way the limiter sees it.
//
// # Redis unavailable
//
// When a round trip fails, or a watchdog finds it past Config.Timeout
// (go-redis would otherwise wait its own read timeout), the node switches
// to its own in-memory sliding window (same rule, this node's requests
// only), logs once, sets the attestd_ratelimit_fallback_active gauge and
// reports Degraded. The local window starts from the requests this node
// admitted recently, which it shadows while Redis is healthy. A prober
// switches back when Redis answers; for one window afterwards a client
// still over the limit in the local window stays refused, since Redis
// never saw the requests admitted during the outage. Limiting is never
// switched off and never refuses everyone; during an outage the fleet as a
// whole admits up to Limit per node.
//
// # Configuration
//
// ConfigFromEnv reads ATTESTD_RATE_LIMIT (default 100; 0 disables
// limiting, for benchmarks only), ATTESTD_RATE_WINDOW (default 60s),
// ATTESTD_RATE_ALLOWLIST, ATTESTD_TRUSTED_PROXIES, ATTESTD_PROXY_HEADER
// (default X-Forwarded-For) and ATTESTD_REDIS_PREFIX (default attestd:).
//
// # Wiring
//
//	cfg, err := ratelimit.ConfigFromEnv(os.Getenv)
//	lim, err := ratelimit.New(rdb, cfg, prometheus.DefaultRegisterer, logger)
//	defer lim.Close()
//	app.Use(lim.Middleware())       // before the routes
//	health: lim.Degraded()
package ratelimit
