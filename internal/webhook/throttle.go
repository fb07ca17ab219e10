package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// throttle is the server's per-webhook ceiling (ATTESTD_WEBHOOK_ENDPOINT_RATE)
// for webhooks without a rate of their own, shared by every worker (GCRA
// in Redis, through redis_rate): at most rate deliveries per second to one
// webhook, in bursts of up to rate. To spare a Redis round trip per
// delivery, a worker takes up to a twentieth of a second's worth at once
// and spends it within reserveFor; the limit can be exceeded by at most
// that much per worker. A webhook with a rate of its own (its
// rateLimitPerSecond, within this ceiling) has a schedule of turns
// instead (slot).
type throttle struct {
	lim   *redis_rate.Limiter
	limit redis_rate.Limit
	take  int
	mu    sync.Mutex
	local map[string]*reservation
}

// reservation is one webhook's budget in this worker; its mutex is held
// across the Redis call, so concurrent senders to one webhook make one
// call and share what it brings.
type reservation struct {
	mu   sync.Mutex
	left int
	at   time.Time
}

const reserveFor = 250 * time.Millisecond

func newThrottle(rdb redis.UniversalClient, prefix string, rate int) *throttle {
	if rate <= 0 {
		return nil
	}
	return &throttle{lim: redis_rate.NewLimiter(prefixed{rdb, prefix}), limit: redis_rate.PerSecond(rate),
		take: max(1, rate/20), local: map[string]*reservation{}}
}

// wait reports how long to wait before sending to webhook id (0: send
// now, and one request is counted). A Redis failure lets the delivery
// through: the throttle protects receivers, it must not stop deliveries.
func (t *throttle) wait(ctx context.Context, id string) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	r := t.local[id]
	if r == nil {
		if len(t.local) > 10_000 {
			clear(t.local)
		}
		r = &reservation{}
		t.local[id] = r
	}
	t.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.left > 0 && now.Sub(r.at) < reserveFor {
		r.left--
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := t.lim.AllowAtMost(ctx, "wh:"+id, t.limit, t.take)
	if err != nil {
		return 0
	}
	if res.Allowed == 0 {
		r.left = 0
		return max(res.RetryAfter, time.Millisecond)
	}
	r.left, r.at = res.Allowed-1, now
	return 0
}

// prefixed puts the deployment's key prefix before redis_rate's keys
// (which it names "rate:<key>").
type prefixed struct {
	redis.UniversalClient
	prefix string
}

func (p prefixed) keys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.prefix + k
	}
	return out
}

func (p prefixed) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.Eval(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalSha(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalRO(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.UniversalClient.EvalShaRO(ctx, sha1, p.keys(keys), args...)
}

func (p prefixed) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return p.UniversalClient.Del(ctx, p.keys(keys)...)
}
