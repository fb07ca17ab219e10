package ratelimit

import "github.com/redis/go-redis/v9"

// decideLua decides one request of one client on the Redis server's clock,
// over a sorted set holding the times (µs) of the client's accepted
// requests. A request at time now is accepted when fewer than limit
// members have a score in (now-window, now]; only then is it added, with a
// member unique to the request, so refused requests do not lengthen the
// wait. decide returns allowed (1|0), remaining, and reset: µs until the
// member whose departure frees a slot leaves the window (for an accepted
// request, the oldest member).
//
// Expiry: the key lives until two windows after its oldest member. Every
// member was added while the oldest was in the window, so it leaves the
// window before the key expires; and the expiry only needs setting when
// the oldest member changes (a new set, or expired members removed), not
// on every request. Idle keys thus linger up to two windows.
const decideLua = `
local function decide(key, member, limit, window, now, ttl)
  -- Members leave the window oldest first: only look further when the
  -- oldest has left (most calls find nothing to remove).
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local count = 0
  if oldest[2] then
    if tonumber(oldest[2]) <= now - window then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
      oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      if oldest[2] then
        redis.call('PEXPIREAT', key, math.floor((tonumber(oldest[2]) + 2 * window) / 1000) + 1)
      end
    end
    if oldest[2] then
      count = redis.call('ZCARD', key)
    end
  end
  if count < limit then
    redis.call('ZADD', key, now, member)
    if count == 0 then
      redis.call('PEXPIRE', key, ttl)
      return 1, limit - 1, window
    end
    return 1, limit - count - 1, tonumber(oldest[2]) + window - now
  end
  -- Refused: a slot frees when the member at rank count-limit leaves (the
  -- oldest, unless the limit was lowered while the set was fuller).
  local pivot = oldest
  if count > limit then
    pivot = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  end
  return 0, 0, tonumber(pivot[2]) + window - now
end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = math.floor(2 * window / 1000) + 1
`

// windowScript decides one request: one key, so it runs anywhere on a
// Redis Cluster.
//
//	KEYS[1]  the client's sorted set
//	ARGV     limit, window (µs), member
//	returns  {allowed, remaining, reset µs, now µs}
const windowScript = decideLua + `
local a, r, w = decide(KEYS[1], ARGV[3], limit, window, now, ttl)
return {a, r, w, now}
`

// batchScriptSrc decides the requests of a batch in one call, in order,
// at one instant. Its keys are different clients' sets, so it is only used
// where every key lives on the same server (a plain *redis.Client), never
// on a Redis Cluster.
//
//	KEYS     the clients' sorted sets (a key may repeat)
//	ARGV     limit, window (µs), a prefix unique to the batch (member i
//	         is the prefix followed by i)
//	returns  "now;allowed,remaining,reset;..." (µs), one triple per key,
//	         as one string: far cheaper to read than 1+3n integers; "e"
//	         instead of a triple when that key failed (say, it holds
//	         another type), so one bad key does not fail the batch
const batchScriptSrc = decideLua + `
local out = {string.format('%d', now)}
for i = 1, #KEYS do
  local ok, a, r, w = pcall(decide, KEYS[i], ARGV[3] .. i, limit, window, now, ttl)
  if ok then
    out[i + 1] = string.format('%d,%d,%d', a, r, w)
  else
    out[i + 1] = 'e'
  end
end
return table.concat(out, ';')
`

var (
	keyScript   = redis.NewScript(windowScript)
	batchScript = redis.NewScript(batchScriptSrc)
)
