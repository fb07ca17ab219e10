package webhook

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// hostCap is the cap on requests per second to one destination of one
// class of endpoints (verified ones, or the others), shared by every
// account and worker through Redis. A destination is the receiver's
// address as dests keys it, however its URL spells the host.
//
// It is a GCRA schedule, one theoretical arrival time per host, in which a
// request over the cap is not refused but takes the next free turn: the
// caller learns how long until its turn and holds the request until then
// (a delivery waits in its partition's retry set, a verification request
// in its webhook row), then sends it without asking again. Requests over
// the cap thus wait their turn in the order they asked, each asking once:
// nothing is polled, so a host held far over its cap costs one Redis call
// per request, not one per request per poll. In any window of t seconds a
// host gets at most rate*t + burst requests of the class (turns are taken
// at most once each; a request that comes back late for its turn asks for
// a new one).
type hostCap struct {
	rdb       redis.UniversalClient
	prefix    string // the deployment's key prefix
	class     string // "v" (verified endpoints) or "u" (the others)
	rate      int
	interval  int64 // µs between turns
	tolerance int64 // µs: how far ahead of the schedule a request may go (the burst)
}

// newHostCap is a cap of rate requests per second to one host for the
// class named class (in the Redis keys), with bursts of a tenth of a
// second's worth; nil (no cap) when rate <= 0.
func newHostCap(rdb redis.UniversalClient, prefix, class string, rate int) *hostCap {
	if rate <= 0 {
		return nil
	}
	interval, tolerance := gcra(rate)
	return &hostCap{rdb: rdb, prefix: prefix, class: class, rate: rate, interval: interval, tolerance: tolerance}
}

// gcra is the schedule of rate requests per second with bursts of a
// tenth of a second's worth: µs between turns, and how far ahead of the
// schedule a request may go.
func gcra(rate int) (interval, tolerance int64) {
	interval = max(int64(time.Second/time.Microsecond)/int64(rate), 1)
	burst := int64(max(1, rate/10))
	return interval, (burst - 1) * interval
}

// hostKey is host's schedule of class under prefix. Every schedule of one
// host (both classes, and its webhooks' own rates: ownKey) carries the
// host as its hash tag, so a script that takes turns in several of them
// runs on one Redis Cluster slot; "h:" keeps the tag from being empty.
func hostKey(prefix, class, host string) string {
	return prefix + "whcap:{h:" + host + "}:" + class
}

// ownKey is webhook id's own-rate schedule at rate per second (a changed
// rate starts a schedule of its own), beside its host's.
func ownKey(prefix, host, id string, rate int) string {
	return prefix + "whcap:{h:" + host + "}:own:" + strconv.Itoa(rate) + ":" + id
}

// turnScript takes host KEYS[1]'s next turn: ARGV[1] µs between turns,
// ARGV[2] the burst tolerance in µs, ARGV[3] "1" to take a turn that is
// not now (queue) or "0" to take one only if it is now. It answers {taken,
// µs until the turn}. Times are Redis's own clock, in µs since 2020, so
// every worker shares one schedule whatever its clock.
var turnScript = redis.NewScript(`
redis.replicate_commands()
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])
local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat < now then tat = now end
local at = tat - tolerance
if at < now then at = now end
if at > now and ARGV[3] ~= '1' then
  return {0, at - now}
end
local nxt = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
return {1, at - now}`)

// turn takes host's next turn and returns how long until it (0: now).
// With queue false it takes the turn only if it is now, and otherwise
// reports the wait with taken false. A Redis failure lets the request
// through (taken, no wait): the cap protects receivers, it must not stop
// deliveries. A nil cap admits everything.
func (c *hostCap) turn(ctx context.Context, host string, queue bool) (wait time.Duration, taken bool) {
	if c == nil {
		return 0, true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	q := "0"
	if queue {
		q = "1"
	}
	res, err := turnScript.Run(ctx, c.rdb, []string{hostKey(c.prefix, c.class, host)}, c.interval, c.tolerance, q).Int64Slice()
	if err != nil || len(res) != 2 {
		return 0, true
	}
	return time.Duration(res[1]) * time.Microsecond, res[0] == 1
}

// String names the cap in logs.
func (c *hostCap) String() string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%d/s", c.rate)
}

// Turn timing: a request held for a turn (a job in the retry set, a
// verification's next attempt) is due turnLead before it, so that the
// time it takes to come back (the retry set is moved every moveEvery, then
// read) is spent before the turn, not after: back early, it waits in place
// for the turn and goes on it. One back up to turnLead+turnEarly before
// its turn (turnEarly: another worker's clock) or up to turnLate after it
// is sent on that turn; one back earlier is held again, one back later
// asks for a new turn.
const (
	turnLead  = 200 * time.Millisecond
	turnEarly = 100 * time.Millisecond
	turnLate  = 2 * time.Second
	// turnAhead bounds a turn a request waits for when it comes back
	// early: one further ahead is not a turn this service took (a record
	// from elsewhere), and the request asks for a new one.
	turnAhead = 24 * time.Hour
)

// onTurn reports whether a request whose turn is at turn (zero: none)
// may go at now on it (after waiting in place until it, at most
// turnLead+turnEarly), and if not whether it is early (it is held again).
func onTurn(turn, now time.Time) (ok, early bool) {
	if turn.IsZero() || turn.After(now.Add(turnAhead)) {
		return false, false
	}
	switch {
	case now.Before(turn.Add(-turnLead - turnEarly)):
		return false, true
	case now.After(turn.Add(turnLate)):
		return false, false
	}
	return true, false
}

// dueFor is when a request held for turn is due back: turnLead before it,
// never before now.
func dueFor(turn, now time.Time) time.Time {
	if at := turn.Add(-turnLead); at.After(now) {
		return at
	}
	return now
}

// A webhook's own rate (its rateLimitPerSecond, within the server's
// ATTESTD_WEBHOOK_ENDPOINT_RATE) is a GCRA schedule in Redis as well, in
// which a delivery over the rate takes the webhook's next free turn and
// waits for it once in the retry set, as over a host's cap. The two are
// taken together by one script when a delivery asks:
//
//   - when its own turn is no later than its host's, it takes both at the
//     host's turn (the arrival the webhook's schedule records is the one
//     the host's does) and is sent on it without asking again;
//   - when its own turn is later, it takes that one only and is held until
//     it; on it, it takes its host's turn (sent then, or held once more
//     for it when the host is over its cap then). The host's schedule is
//     never booked ahead of its own turns: a webhook held by its own rate
//     does not keep the host's turns from the other webhooks there.
//
// On that host turn the webhook's schedule is moved past it, so what the
// webhook sends after it keeps its own interval. Only deliveries that
// already held own turns before a host held over its cap gave theirs can
// go closer together than the webhook's rate: they go on the host's turns,
// in order, at most at the host cap's pace.

// slotScript takes a delivery's turn. KEYS[1] is its host's schedule (of
// its class), KEYS[2] its webhook's own; ARGV[1], ARGV[2] the host's µs
// between turns and burst tolerance (0: no cap), ARGV[3], ARGV[4] the
// webhook's (0: no own rate), ARGV[5] "ask" (a delivery asking) or "host"
// (a delivery on its own turn: the host's turn only). It answers {µs
// until the turn, 1 when that is an own turn only (the host's still to
// take on it) else 0}. Times are Redis's clock, µs since 2020.
var slotScript = redis.NewScript(`
redis.replicate_commands()
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])
local hi, ht = tonumber(ARGV[1]), tonumber(ARGV[2])
local oi, ot = tonumber(ARGV[3]), tonumber(ARGV[4])
local function tat(key)
  local v = tonumber(redis.call('GET', key) or '0') or 0
  if v < now then v = now end
  return v
end
local function set(key, v)
  redis.call('SET', key, string.format('%.0f', v), 'PX', math.floor((v - now) / 1000) + 1000)
end
local htat, hat = 0, now
if hi > 0 then
  htat = tat(KEYS[1])
  hat = htat - ht
  if hat < now then hat = now end
end
if ARGV[5] == 'host' then
  if hi == 0 then return {0, 0} end
  set(KEYS[1], htat + hi)
  if oi > 0 then
    local otat = tat(KEYS[2])
    if otat < hat + oi then set(KEYS[2], hat + oi) end
  end
  return {hat - now, 0}
end
if oi == 0 then
  if hi == 0 then return {0, 0} end
  set(KEYS[1], htat + hi)
  return {hat - now, 0}
end
local otat = tat(KEYS[2])
local oat = otat - ot
if oat < now then oat = now end
if hi == 0 or oat > hat then
  set(KEYS[2], otat + oi)
  return {oat - now, 1}
end
set(KEYS[1], htat + hi)
if otat < hat then otat = hat end
set(KEYS[2], otat + oi)
return {hat - now, 0}`)

// slot takes a delivery's turn at its webhook's own rate (rate per second,
// 0: none) and at cap, its host's (nil: none): how long until it, and
// whether it is an own turn only (the host's turn is taken on it, with
// onOwnTurn). A Redis failure lets the delivery through (no wait): the
// limits protect receivers, they must not stop deliveries.
func slot(ctx context.Context, rdb redis.UniversalClient, prefix string, cap *hostCap, host, id string, rate int, onOwnTurn bool) (wait time.Duration, ownOnly bool) {
	if rate <= 0 || onOwnTurn {
		if cap == nil {
			return 0, false
		}
		if rate <= 0 {
			w, _ := cap.turn(ctx, host, true)
			return w, false
		}
	}
	var hi, ht, oi, ot int64
	class := "u"
	if cap != nil {
		hi, ht, class = cap.interval, cap.tolerance, cap.class
	}
	if rate > 0 {
		oi, ot = gcra(rate)
	}
	mode := "ask"
	if onOwnTurn {
		mode = "host"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := slotScript.Run(ctx, rdb, []string{hostKey(prefix, class, host), ownKey(prefix, host, id, rate)}, hi, ht, oi, ot, mode).Int64Slice()
	if err != nil || len(res) != 2 {
		return 0, false
	}
	return time.Duration(res[0]) * time.Microsecond, res[1] == 1
}
