package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ttlKey is the Redis key of a value kept for a fixed time (GetValueFor):
// outside the epochs, so its life is its TTL and nothing else.
func (c *Cache) ttlKey(key string) string { return c.opt.Prefix + "t" + entryFormat + ":" + key }

// GetValueFor returns the value of key as GetValue does, but keeps it for
// ttl at most, in this node's memory and in Redis, whatever the loader
// says of its immutability and whatever the index epoch: for answers
// whose life is known to the caller (a proof against the newest
// checkpoint lives until the next one; the right edge of a tile until the
// tree grows). A loader's ErrNotFound is not kept. ttl is clamped to
// [1 s, ImmutableTTL].
func (c *Cache) GetValueFor(ctx context.Context, key string, ttl time.Duration, load Loader) (Value, Source, error) {
	ttl = min(max(ttl, time.Second), c.opt.ImmutableTTL)
	if c.opt.Disabled {
		v, imm, err := c.runLoad(ctx, load, c.gen.Load().epoch)
		if err != nil {
			return Value{}, FromLoader, err
		}
		return Value{JSON: v, ETag: ETagOf(v), Immutable: imm}, FromLoader, nil
	}
	now := monotonic()
	if b, ok := lookup(c.immutable, key, now); ok {
		c.m.hitsLocal.Inc()
		v, err := decode(b)
		return v, FromLocal, err
	}
	redisUp := !c.redisDown.Load()
	type result struct {
		b   []byte
		src Source
	}
	r, err, _ := c.sf.Do(c.ttlKey(key), func() (any, error) {
		if redisUp {
			if b, left, ok := c.fromRedisTTL(ctx, key); ok {
				c.m.hitsRedis.Inc()
				c.immutable.set(key, b, now+left)
				return result{b, FromRedis}, nil
			}
		}
		c.m.misses.Inc()
		v, imm, err := c.runLoad(ctx, load, c.gen.Load().epoch)
		if err != nil {
			return nil, err // ErrNotFound included: nothing is kept
		}
		b := encode(v, imm)
		c.immutable.set(key, b, now+ttl)
		if redisUp {
			rctx, cancel := c.redisCtx(ctx)
			defer cancel()
			c.keep(rctx, c.ttlKey(key), b, ttl)
		}
		return result{b, FromLoader}, nil
	})
	if err != nil {
		return Value{}, FromLoader, err
	}
	res := r.(result)
	v, err := decode(res.b)
	return v, res.src, err
}

// fromRedisTTL reads a value kept for a fixed time and how long it has
// left (so this node forgets it when Redis does).
func (c *Cache) fromRedisTTL(ctx context.Context, key string) ([]byte, time.Duration, bool) {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	var get *redis.StringCmd
	var left *redis.DurationCmd
	_, err := c.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		get = p.Get(rctx, c.ttlKey(key))
		left = p.PTTL(rctx, c.ttlKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		c.markDown(fmt.Errorf("cache get: %w", err))
		return nil, 0, false
	}
	b, err := get.Bytes()
	if err != nil {
		return nil, 0, false
	}
	d, err := left.Result()
	if err != nil || d <= 0 {
		return nil, 0, false // no TTL (not ours) or expiring now
	}
	return b, d, true
}
