package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// hostCap is the cap on requests per second to one destination host of
// one class of endpoints (verified ones, or the others), shared by every
// account and worker through Redis.
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
	key       string // the keys' prefix: deployment prefix, "whcap:", the class
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
	interval := max(int64(time.Second/time.Microsecond)/int64(rate), 1)
	burst := int64(max(1, rate/10))
	return &hostCap{rdb: rdb, key: prefix + "whcap:" + class + ":", rate: rate, interval: interval,
		tolerance: (burst - 1) * interval}
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
	res, err := turnScript.Run(ctx, c.rdb, []string{c.key + host}, c.interval, c.tolerance, q).Int64Slice()
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

// Turn timing: a request held for its turn (a job in the retry set, a
// verification's next attempt) that comes back up to turnEarly before it
// (another worker's clock) or up to turnLate after it is sent on that
// turn; one back earlier waits again, one back later asks for a new turn.
const (
	turnEarly = 100 * time.Millisecond
	turnLate  = 2 * time.Second
	// turnAhead bounds a turn a request waits for when it comes back
	// early: one further ahead is not a turn this service took (a record
	// from elsewhere), and the request asks for a new one.
	turnAhead = 24 * time.Hour
)

// onTurn reports whether a request whose turn is at turn (zero: none)
// may go at now on it, and if not whether it is early (it waits again).
func onTurn(turn, now time.Time) (ok, early bool) {
	if turn.IsZero() || turn.After(now.Add(turnAhead)) {
		return false, false
	}
	switch {
	case now.Before(turn.Add(-turnEarly)):
		return false, true
	case now.After(turn.Add(turnLate)):
		return false, false
	}
	return true, false
}
