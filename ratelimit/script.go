package ratelimit

import "github.com/redis/go-redis/v9"

// decideLua decides one request of one client on the Redis server's clock,
// over a sorted set holding the client's accepted requests. A request at
// time now is accepted when fewer than limit members have a score in
// (now-window, now]; only then is it added, so refused requests do not
// lengthen the wait.
//
// Scores are the times in µs; each member is the same time as 16 digits
// followed by a suffix unique to the request, so the oldest member's time
// is read without WITHSCORES and compared as a string: number formatting
// and parsing were a large part of the script's cost.
//
// decide returns allowed (1|0), remaining, and the time (16 digits) of the
// member whose departure frees a slot: for an accepted request the oldest
// member (the request itself in a new set).
//
// Expiry: the key lives until two windows after its oldest member. Every
// member was added while the oldest was in the window, so it leaves the
// window before the key expires; and the expiry only needs setting when
// the oldest member changes (a new set, or expired members removed), not
// on every request. Idle keys thus linger up to two windows.
const decideLua = `
local function decide(key, member, limit, window, nows, edge, ttl)
  -- Members leave the window oldest first: only look further when the
  -- oldest has left (most calls find nothing to remove).
  local oldest = redis.call('ZRANGE', key, '0', '0')
  local count = 0
  if oldest[1] then
    if string.sub(oldest[1], 1, 16) <= edge then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', edge)
      oldest = redis.call('ZRANGE', key, '0', '0')
      if oldest[1] then
        local at = math.floor((tonumber(string.sub(oldest[1], 1, 16)) + 2 * window) / 1000) + 1
        redis.call('PEXPIREAT', key, string.format('%d', at))
      end
    end
    if oldest[1] then
      count = redis.call('ZCARD', key)
    end
  end
  if count < limit then
    redis.call('ZADD', key, nows, nows .. member)
    if count == 0 then
      redis.call('PEXPIRE', key, ttl)
      return 1, limit - 1, nows
    end
    return 1, limit - count - 1, string.sub(oldest[1], 1, 16)
  end
  -- Refused: a slot frees when the member at rank count-limit leaves (the
  -- oldest, unless the limit was lowered while the set was fuller).
  local pivot = oldest
  if count > limit then
    local rank = string.format('%d', count - limit)
    pivot = redis.call('ZRANGE', key, rank, rank)
  end
  return 0, 0, string.sub(pivot[1], 1, 16)
end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local nows = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local edge = string.format('%016d', tonumber(t[1]) * 1000000 + tonumber(t[2]) - window)
local ttl = string.format('%d', math.floor(2 * window / 1000) + 1)
local out = {nows}
`

// windowScript decides one request: one key, so it runs anywhere on a
// Redis Cluster.
//
//	KEYS[1]  the client's sorted set
//	ARGV     limit, window (µs), a member suffix unique to the request
//	returns  {now, allowed, remaining, time}: now and time as 16-digit µs
const windowScript = decideLua + `
out[2], out[3], out[4] = decide(KEYS[1], ':' .. ARGV[3], limit, window, nows, edge, ttl)
return out
`

// batchScriptSrc decides the requests of a batch in one call, in order,
// at one instant. Its keys are different clients' sets, so it is only used
// where every key lives on the same server (a plain *redis.Client), never
// on a Redis Cluster.
//
//	KEYS     the clients' sorted sets (a key may repeat)
//	ARGV     limit, window (µs), a suffix unique to the batch (key i's
//	         member suffix is it followed by i)
//	returns  {now, then allowed, remaining, time per key}; allowed is -1
//	         when that key failed (say, it holds another type), so one bad
//	         key does not fail the batch
const batchScriptSrc = decideLua + `
for i = 1, #KEYS do
  local ok, a, r, w = pcall(decide, KEYS[i], ':' .. ARGV[3] .. i, limit, window, nows, edge, ttl)
  if ok then
    out[3 * i - 1], out[3 * i], out[3 * i + 1] = a, r, w
  else
    out[3 * i - 1], out[3 * i], out[3 * i + 1] = -1, 0, ''
  end
end
return out
`

var (
	keyScript   = redis.NewScript(windowScript)
	batchScript = redis.NewScript(batchScriptSrc)
)
