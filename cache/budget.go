package cache

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the cache keeps in Redis is bounded twice over, so that readers
// cannot fill a Redis that also holds state (rate-limit windows, sessions,
// webhook queues, payment claims) whatever they ask:
//
//   - Admission: an entry of admitBelow bytes or more is stored at its
//     second miss, not its first. The first leaves a marker (a hash of
//     the entry's key, no value) that lives as long as the entry would; a
//     page asked once, as a scan asks each, costs a marker and no answer.
//   - A byte budget (Options.MaxBytes), a quarter for short-lived entries
//     and three quarters for long-lived ones. Each class counts the bytes
//     it stores per window of its TTL / windowsPerTTL, in Redis (shared by
//     every node): an entry stored in window w is gone by the end of
//     window w+n, so what the class holds is at most the sum of its last
//     n+1 counters. A write that would take that sum past the class's
//     share is refused, and the class is full until its window ends.
//
// A refused write costs nothing but a later miss: the answer is served,
// from this node's memory or PostgreSQL.

// class is a kind of entry by how long Redis keeps it.
type class uint8

const (
	// classShort: kept IndexedTTL at most (per-epoch answers, proofs, the
	// right edge of the log's tiles).
	classShort class = iota
	// classLong: kept ImmutableTTL at most (immutable answers, full tiles
	// and entry bundles of the log).
	classLong
	classes
)

var classNames = [classes]string{classShort: "short", classLong: "long"}

// windowsPerTTL is how finely each class counts: what it holds is
// overestimated by one window at most (10 s of 30 s; 1 h of 24 h).
var windowsPerTTL = [classes]int64{classShort: 3, classLong: 24}

// quarters is each class's share of the budget.
var quarters = [classes]int64{classShort: 1, classLong: 3}

const (
	// redisKeyOverhead approximates what Redis spends per key beyond the key
	// and value bytes (dictionary entry, object headers, expiry).
	redisKeyOverhead = 96
	// admitBelow: a value smaller than this is stored at its first miss (a
	// marker would cost about as much as the value).
	admitBelow = 512
	// DefaultMaxBytes is Options.MaxBytes's default.
	DefaultMaxBytes = 64 << 20
)

// budget counts what each class stores in Redis.
type budget struct {
	rdb    redis.UniversalClient
	prefix string
	limit  [classes]int64 // 0: unbounded
	window [classes]time.Duration
	now    func() time.Time

	mu   sync.Mutex
	sums [classes]map[int64]int64 // window -> bytes counted, as last read or charged
	full [classes]int64           // window+1 in which the class refused a write; 0: none
}

func newBudget(rdb redis.UniversalClient, opt Options) *budget {
	b := &budget{rdb: rdb, prefix: opt.Prefix, now: time.Now}
	ttl := [classes]time.Duration{classShort: opt.IndexedTTL, classLong: opt.ImmutableTTL}
	for cls := range classes {
		b.window[cls] = max(ttl[cls]/time.Duration(windowsPerTTL[cls]), time.Second)
		b.sums[cls] = map[int64]int64{}
		if opt.MaxBytes > 0 {
			b.limit[cls] = opt.MaxBytes * quarters[cls] / 4
		}
	}
	return b
}

// classOf is the class of an entry kept for ttl.
func (c *Cache) classOf(ttl time.Duration) class {
	if ttl <= c.opt.IndexedTTL {
		return classShort
	}
	return classLong
}

func (b *budget) windowOf(cls class) int64 {
	return b.now().UnixNano() / int64(b.window[cls])
}

// counterKey is the counter of a class's window. The class in braces is
// its hash tag: a class's counters share a cluster slot, so one MGET reads
// them all.
func (b *budget) counterKey(cls class, w int64) string {
	return b.prefix + "budget:{" + classNames[cls] + "}:" + strconv.FormatInt(w, 10)
}

// isFull reports whether cls refused a write in its current window.
func (b *budget) isFull(cls class) bool {
	w := b.windowOf(cls)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full[cls] == w+1
}

// setFull makes cls full until its window ends, on this node and (with
// a flag in Redis, read at every refresh) on the others.
func (b *budget) setFull(ctx context.Context, cls class) {
	w := b.windowOf(cls)
	b.mu.Lock()
	was := b.full[cls]
	b.full[cls] = w + 1
	b.mu.Unlock()
	if was != w+1 {
		left := time.Duration((w+1)*int64(b.window[cls]) - b.now().UnixNano())
		b.rdb.Set(ctx, b.fullKey(cls, w), "1", max(left, time.Millisecond)) // best effort
	}
}

func (b *budget) fullKey(cls class, w int64) string { return b.counterKey(cls, w) + ":full" }

// heldNow is what cls holds in its live windows, as last read or charged.
func (b *budget) heldNow(cls class) int64 {
	w := b.windowOf(cls)
	return b.heldBefore(cls, w) + b.at(cls, w)
}

func (b *budget) at(cls class, w int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sums[cls][w]
}

// heldBefore is what the class's live windows before w hold, as last read.
func (b *budget) heldBefore(cls class, w int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sum int64
	for i := w - windowsPerTTL[cls]; i < w; i++ {
		sum += b.sums[cls][i]
	}
	return sum
}

// errFull says a write was refused: its class's budget is spent.
var errFull = errors.New("cache budget full")

// charge counts cost bytes against cls, or refuses them (errFull). Other
// errors are Redis's.
func (b *budget) charge(ctx context.Context, cls class, cost int64) error {
	if b.isFull(cls) {
		return errFull
	}
	if b.limit[cls] == 0 {
		return nil
	}
	w := b.windowOf(cls)
	key := b.counterKey(cls, w)
	var incr *redis.IntCmd
	_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.IncrBy(ctx, key, cost)
		// The counter outlives every entry it counts.
		p.Expire(ctx, key, b.window[cls]*time.Duration(windowsPerTTL[cls]+2))
		return nil
	})
	if err != nil {
		return err
	}
	v := incr.Val()
	if v+b.heldBefore(cls, w) > b.limit[cls] {
		b.rdb.DecrBy(ctx, key, cost) // best effort: the counter only overstates
		b.setFull(ctx, cls)
		return errFull
	}
	b.mu.Lock()
	b.sums[cls][w] = max(b.sums[cls][w], v)
	b.mu.Unlock()
	return nil
}

// refresh reads every live window's counter (other nodes store too).
func (b *budget) refresh(ctx context.Context) error {
	for cls := range classes {
		if b.limit[cls] == 0 {
			continue
		}
		w := b.windowOf(cls)
		n := windowsPerTTL[cls]
		keys := make([]string, 0, n+2)
		for i := w - n; i <= w; i++ {
			keys = append(keys, b.counterKey(cls, i))
		}
		vals, err := b.rdb.MGet(ctx, append(keys, b.fullKey(cls, w))...).Result()
		if err != nil {
			return fmt.Errorf("read cache budget: %w", err)
		}
		full := vals[len(vals)-1] != nil
		vals = vals[:len(vals)-1]
		sums := make(map[int64]int64, len(vals))
		for i, v := range vals {
			s, _ := v.(string)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
				sums[w-int64(len(vals)-1-i)] = n
			}
		}
		b.mu.Lock()
		b.sums[cls] = sums
		if full {
			b.full[cls] = w + 1
		}
		b.mu.Unlock()
	}
	return nil
}

// allocated is what Redis's allocator (jemalloc) takes for n bytes: size
// classes four per doubling, so up to a quarter more than asked.
func allocated(n int) int64 {
	if n <= 128 {
		return int64((n + 15) &^ 15)
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return int64((n + step - 1) &^ (step - 1))
}

// costOf is what an entry of key and value takes in Redis, roughly.
func costOf(key string, value int) int64 {
	return allocated(len(key)) + allocated(value) + redisKeyOverhead
}

// seenKey is the marker of an entry's first miss: a hash of its Redis
// key (128 bits, so two entries never share one), no value.
func (c *Cache) seenKey(entryKey string) string {
	h := sha256.Sum256([]byte(entryKey))
	return c.opt.Prefix + "seen:" + base64.RawURLEncoding.EncodeToString(h[:16])
}

// keep stores entry b under key for ttl when admission and the budget let
// it (see above).
func (c *Cache) keep(ctx context.Context, key string, b []byte, ttl time.Duration) {
	cls := c.classOf(ttl)
	if c.budget.isFull(cls) {
		c.m.writes[cls][outcomeRefused].Inc()
		return
	}
	if len(b) >= admitBelow {
		mk := c.seenKey(key)
		first, err := c.rdb.SetNX(ctx, mk, "", ttl).Result()
		if err != nil {
			c.writeFailed(ctx, cls, err)
			return
		}
		if first {
			// Only a new marker is charged (the second miss finds it and
			// pays for the entry alone); one that passes the share makes
			// the class full like any write.
			if err := c.budget.charge(ctx, cls, costOf(mk, 0)); err != nil {
				c.writeFailed(ctx, cls, err)
				return
			}
			c.m.writes[cls][outcomeDeferred].Inc()
			return
		}
	}
	if err := c.budget.charge(ctx, cls, costOf(key, len(b))); err != nil {
		c.writeFailed(ctx, cls, err)
		return
	}
	if err := c.rdb.Set(ctx, key, b, ttl).Err(); err != nil {
		c.writeFailed(ctx, cls, err)
		return
	}
	c.m.writes[cls][outcomeStored].Inc()
}

// writeFailed counts a write the cache did not make. A spent budget, or a
// Redis out of memory (a state that grew, or a budget set above the
// server's room), makes the class full until its window ends: the cache
// stops writing rather than report Redis down, since it still reads.
func (c *Cache) writeFailed(ctx context.Context, cls class, err error) {
	if errors.Is(err, errFull) || strings.HasPrefix(err.Error(), "OOM ") {
		if !errors.Is(err, errFull) {
			c.budget.setFull(ctx, cls)
		}
		c.m.writes[cls][outcomeRefused].Inc()
		return
	}
	c.markDown(err)
}

// Full reports whether the cache is refusing writes to Redis now (a class
// spent its budget, or Redis said it is out of memory): answers are still
// served, from this node's memory or PostgreSQL.
func (c *Cache) Full() bool {
	for cls := range classes {
		if c.budget.isFull(cls) {
			return true
		}
	}
	return false
}
