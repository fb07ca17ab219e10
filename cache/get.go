package cache

import (
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/redis/go-redis/v9"
)

// Loader loads a value from the source of truth. It returns ErrNotFound
// for a missing record, and says whether the value can never change.
type Loader func(ctx context.Context) (val []byte, immutable bool, err error)

// Source says where a value came from.
type Source int

// Sources of a value.
const (
	FromLocal Source = iota
	FromRedis
	FromLoader
)

// entryFormat names the layout of stored entries (see encode). It is part
// of every Redis key, so nodes of two releases that share a Redis during a
// rolling deploy never read each other's entries.
const entryFormat = "2"

func (c *Cache) immutableKey(key string) string { return c.opt.Prefix + "i" + entryFormat + ":" + key }

func (c *Cache) indexedKey(key string, epoch uint64) string {
	return c.opt.Prefix + "e" + strconv.FormatUint(epoch, 10) + "." + entryFormat + ":" + key
}

// Get returns the JSON of key; see GetValue.
func (c *Cache) Get(ctx context.Context, key string, load Loader) ([]byte, Source, error) {
	v, src, err := c.GetValue(ctx, key, load)
	return v.JSON, src, err
}

// Peek returns the value of key when this node's memory holds it, as
// GetValue would: no Redis, no load, and no allocation. A miss (including
// a remembered "not found") says nothing: GetValue decides. The returned
// slices must not be modified.
func (c *Cache) Peek(key []byte) (Value, bool) {
	if c.opt.Disabled {
		return Value{}, false
	}
	b, ok := inMemory(c, c.gen.Load(), key, monotonic())
	if !ok || len(b) == 0 || b[0] != tagValue {
		return Value{}, false
	}
	v, err := decode(b)
	if err != nil {
		return Value{}, false
	}
	c.m.hitsLocal.Inc()
	return v, true
}

// inMemory finds key in this node's memory: the immutable layer, then g's
// indexed layer, which is read only while Redis answers (otherwise a write
// elsewhere could not be announced: every read loads).
func inMemory[K string | []byte](c *Cache, g *generation, key K, now time.Duration) ([]byte, bool) {
	if b, ok := lookup(c.immutable, key, now); ok {
		return b, true
	}
	if c.redisDown.Load() {
		return nil, false
	}
	return lookup(g.local, key, now)
}

// GetValue returns the value of key, trying the local layer, then Redis,
// then load. Indexed values are keyed by the current epoch. The returned
// slices must not be modified.
func (c *Cache) GetValue(ctx context.Context, key string, load Loader) (Value, Source, error) {
	if tracing.Enabled() {
		return c.getValueTraced(ctx, key, load)
	}
	return c.getValue(ctx, key, load)
}

var sourceNames = [...]string{FromLocal: "local", FromRedis: "redis", FromLoader: "loader"}

// getValueTraced is GetValue in a "cache get" span that says where the
// value came from (its Redis reads and the load are its children).
// A hit in this node's memory makes no span: the lookup takes less time
// than a span costs, and its request's span already says how long it took.
func (c *Cache) getValueTraced(ctx context.Context, key string, load Loader) (Value, Source, error) {
	if !c.opt.Disabled {
		if b, ok := inMemory(c, c.gen.Load(), key, monotonic()); ok {
			c.m.hitsLocal.Inc()
			v, err := decode(b)
			return v, FromLocal, err
		}
	}
	ctx, span := tracing.Start(ctx, "cache get", trace.SpanKindInternal)
	v, src, err := c.getValue(ctx, key, load)
	if src >= 0 && int(src) < len(sourceNames) {
		span.SetAttributes(attribute.String("attestd.cache.source", sourceNames[src]))
	}
	if errors.Is(err, ErrNotFound) {
		tracing.End(span, nil)
	} else {
		tracing.End(span, err)
	}
	return v, src, err
}

func (c *Cache) getValue(ctx context.Context, key string, load Loader) (Value, Source, error) {
	if c.opt.Disabled {
		v, imm, err := c.runLoad(ctx, load, c.gen.Load().epoch)
		if err != nil {
			return Value{}, FromLoader, err
		}
		// Nothing is kept: no compressed form, and the tag is made now.
		return Value{JSON: v, ETag: ETagOf(v), Immutable: imm}, FromLoader, nil
	}
	now := monotonic()
	g := c.gen.Load()
	if b, ok := inMemory(c, g, key, now); ok {
		c.m.hitsLocal.Inc()
		v, err := decode(b)
		return v, FromLocal, err
	}
	epoch, idx := g.epoch, g.local
	redisUp := !c.redisDown.Load()
	type result struct {
		b   []byte
		src Source
	}
	r, err, _ := c.sf.Do(c.indexedKey(key, epoch), func() (any, error) {
		if redisUp {
			if b, imm, ok := c.fromRedis(ctx, key, epoch); ok {
				c.m.hitsRedis.Inc()
				c.keepLocal(key, b, imm, idx, now)
				return result{b, FromRedis}, nil
			}
		}
		c.m.misses.Inc()
		v, imm, err := c.runLoad(ctx, load, epoch)
		var b []byte
		switch {
		case errors.Is(err, ErrNotFound):
			b, imm = []byte{tagNotFound}, false
		case err != nil:
			return nil, err
		default:
			b = encode(v, imm)
		}
		if redisUp || imm {
			c.keepLocal(key, b, imm, idx, now)
		}
		if redisUp {
			c.toRedis(ctx, key, epoch, b, imm)
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

// runLoad loads a value for epoch. The epoch is at least the WAL position
// of every commit announced up to it, so the load's reads must reflect
// that position (store.AtLeast): a read replica that has not replayed the
// commit behind the epoch is not read, and stale data is never cached
// under the new epoch.
func (c *Cache) runLoad(ctx context.Context, load Loader, epoch uint64) ([]byte, bool, error) {
	// The load is shared by every waiter: give it its own deadline rather
	// than the first caller's.
	lctx, cancel := context.WithTimeout(store.AtLeast(context.WithoutCancel(ctx), epoch), c.opt.LoadTimeout)
	defer cancel()
	start := time.Now()
	v, imm, err := load(lctx)
	c.m.loadSeconds.Observe(time.Since(start).Seconds())
	return v, imm, err
}

func (c *Cache) keepLocal(key string, b []byte, immutable bool, idx *local, now time.Duration) {
	if immutable {
		c.immutable.set(key, b, now+c.opt.ImmutableTTL)
		return
	}
	idx.set(key, b, now+c.opt.IndexedTTL)
}

func (c *Cache) fromRedis(ctx context.Context, key string, epoch uint64) ([]byte, bool, bool) {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	var immCmd, idxCmd *redis.StringCmd
	_, err := c.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		immCmd = p.Get(rctx, c.immutableKey(key))
		idxCmd = p.Get(rctx, c.indexedKey(key, epoch))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		c.markDown(fmt.Errorf("cache get: %w", err))
		return nil, false, false
	}
	if b, err := immCmd.Bytes(); err == nil {
		return b, true, true
	}
	if b, err := idxCmd.Bytes(); err == nil {
		return b, false, true
	}
	return nil, false, false
}

func (c *Cache) toRedis(ctx context.Context, key string, epoch uint64, b []byte, immutable bool) {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	if immutable {
		c.keep(rctx, c.immutableKey(key), b, c.opt.ImmutableTTL)
	} else {
		c.keep(rctx, c.indexedKey(key, epoch), b, c.opt.IndexedTTL)
	}
}
