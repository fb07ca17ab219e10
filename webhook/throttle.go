package webhook

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// throttle is the per-endpoint rate shared by every worker (GCRA in
// Redis, through redis_rate): at most rate deliveries per second to one
// webhook, in bursts of up to rate.
type throttle struct {
	lim   *redis_rate.Limiter
	limit redis_rate.Limit
}

func newThrottle(rdb redis.UniversalClient, prefix string, rate int) *throttle {
	if rate <= 0 {
		return nil
	}
	return &throttle{lim: redis_rate.NewLimiter(prefixed{rdb, prefix}), limit: redis_rate.PerSecond(rate)}
}

// wait reports how long to wait before sending to webhook id (0: send
// now). A Redis failure lets the delivery through: the throttle protects
// receivers, it must not stop deliveries.
func (t *throttle) wait(ctx context.Context, id string) time.Duration {
	if t == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := t.lim.Allow(ctx, "wh:"+id, t.limit)
	if err != nil || res.Allowed > 0 {
		return 0
	}
	return max(res.RetryAfter, time.Millisecond)
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
