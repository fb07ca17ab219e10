package ratelimit

import "github.com/redis/go-redis/v9"

// windowScript decides one request of one client atomically, on the Redis
// server's clock, over a sorted set holding the times (µs) of the client's
// accepted requests in the window.
//
//	KEYS[1]  the client's sorted set (one key: safe on Redis Cluster)
//	ARGV[1]  limit
//	ARGV[2]  window in microseconds
//	ARGV[3]  a member unique to this request
//
// A request at time now is accepted when fewer than limit members have a
// score in (now-window, now]; only then is it added, so refused requests
// do not lengthen the wait. It returns {allowed (1|0), remaining, reset µs,
// now µs}: reset is how long until the member whose departure frees a slot
// leaves the window (for an accepted request, the oldest member).
const windowScript = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, ARGV[3])
  redis.call('PEXPIRE', key, math.floor(window / 1000) + 1)
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {1, limit - count - 1, tonumber(oldest[2]) + window - now, now}
end
local pivot = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
return {0, 0, tonumber(pivot[2]) + window - now, now}
`

var script = redis.NewScript(windowScript)
