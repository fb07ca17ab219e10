package cache

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newCache(t *testing.T, url, prefix string, opt Options) *Cache {
	t.Helper()
	o, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse")
	o.MaxRetries = 0
	o.DialTimeout, o.ReadTimeout = 200*time.Millisecond, 200*time.Millisecond
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	opt.Prefix = prefix
	if opt.PollInterval == 0 {
		opt.PollInterval = 100 * time.Millisecond
	}
	c, err := New(context.Background(), rdb, opt)
	testenv.Must(t, err, "new cache")
	t.Cleanup(c.Close)
	return c
}

func TestConcurrentMissesLoadOnce(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{})
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) ([]byte, bool, error) {
		loads.Add(1)
		<-release
		return []byte(`{"v":1}`), false, nil
	}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, err := c.Get(context.Background(), "k", load)
			if err != nil || string(v) != `{"v":1}` {
				t.Errorf("got %q %v", v, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let every goroutine reach the miss
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads for 50 concurrent misses, want 1", n)
	}
	// Now a hit from the local layer, no load.
	if _, src, _ := c.Get(context.Background(), "k", load); src != FromLocal || loads.Load() != 1 {
		t.Fatalf("second get from %v, loads %d", src, loads.Load())
	}
}

func TestEpochBumpReachesOtherNodes(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	a := newCache(t, url, prefix, Options{})
	b := newCache(t, url, prefix, Options{})
	writer := newCache(t, url, prefix, Options{SkipSubscriber: true})
	version := atomic.Int32{}
	load := func(context.Context) ([]byte, bool, error) {
		return []byte{byte('0' + version.Load())}, false, nil
	}
	for _, c := range []*Cache{a, b} {
		if v, _, _ := c.Get(context.Background(), "list", load); string(v) != "0" {
			t.Fatalf("initial %q", v)
		}
	}
	// Node b hits Redis for what node a loaded? Its own local layer first.
	version.Store(1)
	testenv.Must(t, writer.BumpEpoch(context.Background(), 0), "bump")
	testenv.WaitForState(t, "both nodes at the writer's epoch", testenv.Patience, func() (bool, string) {
		ea, eb, ew := a.Epoch(), b.Epoch(), writer.Epoch()
		return ea == ew && eb == ew, fmt.Sprintf("epochs a=%d b=%d writer=%d", ea, eb, ew)
	})
	for _, c := range []*Cache{a, b} {
		if v, _, _ := c.Get(context.Background(), "list", load); string(v) != "1" {
			t.Fatalf("after bump %q, want the new value", v)
		}
	}
}

func TestImmutableNotFoundAndErrors(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{})
	other := newCache(t, url, prefix, Options{})
	calls := 0
	imm := func(context.Context) ([]byte, bool, error) { calls++; return []byte("x"), true, nil }
	c.Get(context.Background(), "a", imm)
	testenv.Must(t, c.BumpEpoch(context.Background(), 0), "bump")
	// Immutable values survive epoch changes, locally and in Redis.
	if _, src, _ := c.Get(context.Background(), "a", imm); src != FromLocal || calls != 1 {
		t.Fatalf("immutable after bump: %v, %d loads", src, calls)
	}
	if _, src, _ := other.Get(context.Background(), "a", imm); src != FromRedis || calls != 1 {
		t.Fatalf("immutable on another node: %v, %d loads", src, calls)
	}
	// Not-found is cached per epoch.
	missing := 0
	nf := func(context.Context) ([]byte, bool, error) { missing++; return nil, false, ErrNotFound }
	for i := 0; i < 3; i++ {
		if _, _, err := c.Get(context.Background(), "gone", nf); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err %v", err)
		}
	}
	if missing != 1 {
		t.Fatalf("%d loads of a missing key, want 1", missing)
	}
	// Load errors are not cached.
	failing := 0
	boom := errors.New("db down")
	fail := func(context.Context) ([]byte, bool, error) { failing++; return nil, false, boom }
	for i := 0; i < 2; i++ {
		if _, _, err := c.Get(context.Background(), "f", fail); !errors.Is(err, boom) {
			t.Fatalf("err %v", err)
		}
	}
	if failing != 2 {
		t.Fatalf("errors were cached: %d loads", failing)
	}
}

func TestDisabledAlwaysLoads(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{Disabled: true})
	n := 0
	for i := 0; i < 3; i++ {
		c.Get(context.Background(), "k", func(context.Context) ([]byte, bool, error) { n++; return []byte("v"), true, nil })
	}
	if n != 3 {
		t.Fatalf("%d loads, want 3", n)
	}
	if _, ok := c.Peek([]byte("k")); ok {
		t.Fatal("peek of a disabled cache: hit")
	}
}

func TestRedisDownThenBack(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	c := newCache(t, r.URL, "p:", Options{})
	loads := 0
	load := func(context.Context) ([]byte, bool, error) { loads++; return []byte("v"), false, nil }
	c.Get(context.Background(), "k", load)
	c.Get(context.Background(), "final", func(context.Context) ([]byte, bool, error) { return []byte("f"), true, nil })
	port := r.Port()
	r.Kill()
	// The poll notices.
	testenv.WaitFor(t, "the cache notices the Redis outage", testenv.Patience, c.Degraded)
	// Then indexed values are not served from memory: a write elsewhere
	// could not be announced. Every read loads.
	before := loads
	c.Get(context.Background(), "k", load)
	c.Get(context.Background(), "k", load)
	if loads != before+2 {
		t.Fatalf("loads %d -> %d while redis is down, want +2", before, loads)
	}
	if _, ok := c.Peek([]byte("k")); ok {
		t.Fatal("peek of an indexed value while redis is down: hit")
	}
	if _, ok := c.Peek([]byte("final")); !ok {
		t.Fatal("peek of an immutable value while redis is down: miss")
	}
	_, err := startRedisOn(t, port)
	testenv.Must(t, err, "restart redis")
	testenv.WaitFor(t, "the cache recovers", testenv.Patience, func() bool { return !c.Degraded() })
}

func TestLargeValuesAreStoredCompressed(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{})
	other := newCache(t, url, prefix, Options{})
	big := []byte(`{"data":"` + strings.Repeat("attestation ", 500) + `"}`)
	load := func(context.Context) ([]byte, bool, error) { return big, false, nil }
	for _, n := range []*Cache{c, other} { // a load, then a Redis hit
		v, _, err := n.GetValue(context.Background(), "big", load)
		testenv.Must(t, err, "get")
		if !bytes.Equal(v.JSON, big) || v.Gzip == nil || len(v.Gzip) >= len(big)/4 {
			t.Fatalf("json %d bytes, gzip %d bytes", len(v.JSON), len(v.Gzip))
		}
		zr, err := gzip.NewReader(bytes.NewReader(v.Gzip))
		testenv.Must(t, err, "gzip")
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(plain, big) {
			t.Fatalf("gzip does not decompress to the json: %v", err)
		}
	}
	small, _, _ := c.GetValue(context.Background(), "small", func(context.Context) ([]byte, bool, error) { return []byte(`{}`), false, nil })
	if small.Gzip != nil || string(small.JSON) != `{}` {
		t.Fatalf("small value %+v", small)
	}
	good := encode(big, false)
	for _, bad := range [][]byte{nil, {'x'}, {'v', 'a'}, {tagValue, 0, 0, 1}, {tagValue, 0, 0, 0, 0, 9, 'a'},
		good[:valueHeader+3], append([]byte{tagValue, flagGzip}, good[2:valueHeader]...), encode([]byte("{}"), false)[:valueHeader+1]} {
		if _, err := decode(bad); err == nil {
			t.Errorf("decode(%q) accepted", bad)
		}
	}
}

// TestValuesCarryTheirETags: each representation has a strong entity tag
// computed when the value was cached, the same on every node, different
// for the identity and gzip forms and for different bytes; immutability
// travels with the value.
func TestValuesCarryTheirETags(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{})
	other := newCache(t, url, prefix, Options{})
	big := []byte(`{"data":"` + strings.Repeat("receipt ", 400) + `"}`)
	loads := 0
	load := func(imm bool, b []byte) Loader {
		return func(context.Context) ([]byte, bool, error) { loads++; return b, imm, nil }
	}
	first, _, err := c.GetValue(context.Background(), "final", load(true, big))
	testenv.Must(t, err, "get")
	sum := sha256.Sum256(big)
	wantTag := `"` + base64.RawURLEncoding.EncodeToString(sum[:15]) + `"`
	zsum := sha256.Sum256(first.Gzip)
	wantGzipTag := `"` + base64.RawURLEncoding.EncodeToString(zsum[:15]) + `-gz"`
	if string(first.ETag) != wantTag || string(first.GzipETag) != wantGzipTag || !first.Immutable {
		t.Fatalf("tags %s %s immutable %v; want %s %s true", first.ETag, first.GzipETag, first.Immutable, wantTag, wantGzipTag)
	}
	// A large value reaches Redis at its second miss (admission): the
	// other node's, which loads it again.
	_, _, err = other.GetValue(context.Background(), "final", load(true, big))
	testenv.Must(t, err, "get")
	third := newCache(t, url, prefix, Options{})
	for _, n := range []*Cache{c, third} { // the local layer, then Redis on a third node
		v, src, err := n.GetValue(context.Background(), "final", load(true, big))
		testenv.Must(t, err, "get")
		if src == FromLoader || !bytes.Equal(v.ETag, first.ETag) || !bytes.Equal(v.GzipETag, first.GzipETag) || !v.Immutable {
			t.Fatalf("from %v: tags %s %s immutable %v", src, v.ETag, v.GzipETag, v.Immutable)
		}
	}
	if loads != 2 {
		t.Fatalf("%d loads, want 2 (the first miss of each of two nodes)", loads)
	}
	small, _, err := c.GetValue(context.Background(), "small", load(false, []byte(`{"n":1}`)))
	testenv.Must(t, err, "get")
	small2, _, err := c.GetValue(context.Background(), "small2", load(false, []byte(`{"n":2}`)))
	testenv.Must(t, err, "get")
	if small.GzipETag != nil || small.Immutable || len(small.ETag) != etagLen || bytes.Equal(small.ETag, small2.ETag) {
		t.Fatalf("small values: %s / %s, gzip tag %q, immutable %v", small.ETag, small2.ETag, small.GzipETag, small.Immutable)
	}
	// Uncached answers carry the same tag, made per request.
	off := newCache(t, url, prefix, Options{Disabled: true})
	v, _, err := off.GetValue(context.Background(), "final", load(true, big))
	testenv.Must(t, err, "get")
	if string(v.ETag) != wantTag || v.Gzip != nil || !v.Immutable {
		t.Fatalf("uncached: tag %s gzip %d bytes immutable %v", v.ETag, len(v.Gzip), v.Immutable)
	}
}

// TestBumpedHearsEveryBump: the hook hears each epoch this process set,
// including a bump retried after Redis came back.
func TestBumpedHearsEveryBump(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	var mu sync.Mutex
	var heard []uint64
	writer := newCache(t, r.URL, "b:", Options{SkipSubscriber: true, Bumped: func(e uint64) {
		mu.Lock()
		heard = append(heard, e)
		mu.Unlock()
	}})
	testenv.Must(t, writer.BumpEpoch(context.Background(), 0), "bump")
	testenv.Must(t, writer.BumpEpoch(context.Background(), 1000), "bump")
	port := r.Port()
	r.Stop()
	if err := writer.BumpEpoch(context.Background(), 5000); err == nil {
		t.Fatal("bump with Redis stopped succeeded")
	}
	_, err := startRedisOn(t, port)
	testenv.Must(t, err, "restart redis")
	var got []uint64
	testenv.WaitForState(t, "three bumps heard", testenv.Patience, func() (bool, string) {
		mu.Lock()
		got = append([]uint64(nil), heard...)
		mu.Unlock()
		return len(got) >= 3, fmt.Sprintf("heard %v", got)
	})
	if !slices.Equal(got, []uint64{1, 1000, 5000}) {
		t.Fatalf("heard %v, want [1 1000 5000]", got)
	}
}

// TestFailedBumpIsRetriedByWriters: a writer that never reads (the
// indexer, seed) has no subscription, yet a bump that failed while Redis
// was away must still reach Redis once it is back, with its floor.
func TestFailedBumpIsRetriedByWriters(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	port := r.Port()
	writer := newCache(t, r.URL, "w:", Options{SkipSubscriber: true})
	r.Stop()
	if err := writer.BumpEpoch(context.Background(), 123_456_789); err == nil {
		t.Fatal("bump with Redis stopped succeeded")
	}
	_, err := startRedisOn(t, port)
	testenv.Must(t, err, "restart redis")
	check := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer check.Close()
	testenv.WaitForState(t, "the failed bump's floor in Redis", testenv.Patience, func() (bool, string) {
		v, err := check.Get(context.Background(), "w:epoch").Uint64()
		return v >= 123_456_789, fmt.Sprintf("epoch in Redis %d (%v), want the failed bump's floor 123456789", v, err)
	})
}

// TestPeekAnswersFromMemoryOnly: Peek holds what GetValue would answer
// from this node's memory, and nothing else: values not loaded yet,
// remembered "not found"s and values of an older epoch are misses, while
// immutable values outlive epochs. It does not allocate (so the test is
// not parallel: AllocsPerRun counts the whole process's allocations).
func TestPeekAnswersFromMemoryOnly(t *testing.T) {
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{})
	writer := newCache(t, url, prefix, Options{SkipSubscriber: true})
	ctx := context.Background()
	if _, ok := c.Peek([]byte("list")); ok {
		t.Fatal("peek before any load: hit")
	}
	indexed := func(context.Context) ([]byte, bool, error) { return []byte(`{"list":1}`), false, nil }
	final := func(context.Context) ([]byte, bool, error) { return []byte(`{"final":1}`), true, nil }
	gone := func(context.Context) ([]byte, bool, error) { return nil, false, ErrNotFound }
	for key, load := range map[string]Loader{"list": indexed, "final": final} {
		want, _, err := c.GetValue(ctx, key, load)
		testenv.Must(t, err, "load %s", key)
		got, ok := c.Peek([]byte(key))
		if !ok || !bytes.Equal(got.JSON, want.JSON) || !bytes.Equal(got.ETag, want.ETag) || got.Immutable != want.Immutable {
			t.Fatalf("peek %s: %+v %v, want %+v", key, got, ok, want)
		}
	}
	if _, _, err := c.GetValue(ctx, "gone", gone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("gone: %v", err)
	}
	if _, ok := c.Peek([]byte("gone")); ok {
		t.Fatal("peek of a remembered not-found: hit")
	}
	if n := testing.AllocsPerRun(100, func() { c.Peek([]byte("final")) }); n != 0 {
		t.Fatalf("peek allocates %v times", n)
	}
	testenv.Must(t, writer.BumpEpoch(ctx, 0), "bump")
	testenv.WaitForState(t, "the node at the writer's epoch", testenv.Patience, func() (bool, string) {
		e, w := c.Epoch(), writer.Epoch()
		return e == w, fmt.Sprintf("epoch %d, writer at %d", e, w)
	})
	if _, ok := c.Peek([]byte("list")); ok {
		t.Fatal("peek of an older epoch's value: hit")
	}
	if _, ok := c.Peek([]byte("final")); !ok {
		t.Fatal("peek of an immutable value after an epoch change: miss")
	}
}
