package purge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// call is one request the CDN double received.
type call struct {
	epoch  uint64
	tags   []string
	header http.Header
}

// cdn is the double of a CDN's purge API (the outside world): it records
// calls and answers with the status respond gives (200 when nil), after
// hold (when set) lets it.
type cdn struct {
	mu      sync.Mutex
	calls   []call
	respond func(n int) int
	hold    chan struct{}
	srv     *httptest.Server
}

func newCDN(t *testing.T) *cdn {
	c := &cdn{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Tags []string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		e, _ := strconv.ParseUint(r.Header.Get(HeaderEpoch), 10, 64)
		c.mu.Lock()
		c.calls = append(c.calls, call{epoch: e, tags: body.Tags, header: r.Header.Clone()})
		n, hold := len(c.calls), c.hold
		c.mu.Unlock()
		if hold != nil {
			<-hold
		}
		status := 200
		if c.respond != nil {
			status = c.respond(n)
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			status = 400
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cdn) snapshot() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.calls...)
}

func newRedis(t *testing.T, url string) *redis.Client {
	o, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse")
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestWriterPurgesOncePerEpochChange: with two reading nodes and one
// writer on one Redis, each epoch change the writer makes is purged by one
// call, for that epoch, with the keys in both forms and the configured
// header; the readers, which hear every change too, call nothing.
func TestWriterPurgesOncePerEpochChange(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	d := newCDN(t)
	p, err := New(Config{URL: d.srv.URL + "/purge?zone=z1", HeaderName: "Authorization", HeaderValue: "Bearer s3cret",
		MinInterval: -1, Registerer: prometheus.NewRegistry()})
	testenv.Must(t, err, "purger")
	defer p.Close()
	writer, err := cache.New(context.Background(), newRedis(t, url), cache.Options{Prefix: prefix, SkipSubscriber: true, Bumped: p.Epoch})
	testenv.Must(t, err, "writer")
	defer writer.Close()
	for range 2 {
		r, err := cache.New(context.Background(), newRedis(t, url), cache.Options{Prefix: prefix, PollInterval: 50 * time.Millisecond})
		testenv.Must(t, err, "reader")
		defer r.Close()
	}
	for i := 1; i <= 3; i++ {
		testenv.Must(t, writer.BumpEpoch(context.Background(), 0), "bump")
		e := writer.Epoch()
		testenv.WaitFor(t, "the purge of epoch "+strconv.FormatUint(e, 10), testenv.Patience, func() bool { return len(d.snapshot()) == i })
		c := d.snapshot()[i-1]
		if c.epoch != e || len(c.tags) != 4 || c.tags[0] != "lists" || c.header.Get("Surrogate-Key") != "lists stats agents confirmed" ||
			c.header.Get("Authorization") != "Bearer s3cret" {
			t.Fatalf("call %d: epoch %d (want %d), tags %v, headers %v", i, c.epoch, e, c.tags, c.header)
		}
	}
	// Nothing more arrives: nobody else calls.
	p.Close()
	if n := len(d.snapshot()); n != 3 {
		t.Fatalf("%d calls for 3 epoch changes", n)
	}
}

// TestBurstIsOneCall: epochs that arrive while a call is in flight are
// purged by one more call, for the newest of them.
func TestBurstIsOneCall(t *testing.T) {
	t.Parallel()
	d := newCDN(t)
	d.hold = make(chan struct{})
	p, err := New(Config{URL: d.srv.URL, MinInterval: -1})
	testenv.Must(t, err, "purger")
	defer p.Close()
	p.Epoch(1)
	testenv.WaitFor(t, "the first call", testenv.Patience, func() bool { return len(d.snapshot()) == 1 })
	for e := uint64(2); e <= 50; e++ {
		p.Epoch(e)
	}
	p.Epoch(7) // older than what it heard: ignored
	d.mu.Lock()
	close(d.hold)
	d.hold = nil
	d.mu.Unlock()
	testenv.WaitFor(t, "the second call", testenv.Patience, func() bool { return len(d.snapshot()) == 2 })
	p.Close()
	calls := d.snapshot()
	if len(calls) != 2 || calls[0].epoch != 1 || calls[1].epoch != 50 {
		t.Fatalf("calls %+v, want epochs 1 then 50", calls)
	}
}

// TestFailuresAreRetriedThenGivenUp: a failing CDN is retried with
// backoff, each call bounded by the timeout; after the retries the purge
// is given up (and the next epoch purges again).
func TestFailuresAreRetriedThenGivenUp(t *testing.T) {
	t.Parallel()
	d := newCDN(t)
	d.respond = func(n int) int {
		if n <= 2 {
			return 503
		}
		return 204
	}
	reg := prometheus.NewRegistry()
	p, err := New(Config{URL: d.srv.URL, MinInterval: -1, Retries: 3, Registerer: reg})
	testenv.Must(t, err, "purger")
	p.Epoch(9)
	testenv.WaitFor(t, "two failures then a success", testenv.Patience, func() bool { return value(p.m.epoch) == 9 })
	if calls := d.snapshot(); len(calls) != 3 || value(p.m.calls.WithLabelValues("error")) != 2 {
		t.Fatalf("%d calls, %v errors", len(calls), value(p.m.calls.WithLabelValues("error")))
	}
	p.Close()

	// A CDN that never answers: each call ends at the timeout; one retry,
	// then the purge is given up.
	hang := newCDN(t)
	hang.hold = make(chan struct{})
	defer close(hang.hold)
	q, err := New(Config{URL: hang.srv.URL, MinInterval: -1, Retries: 1, Timeout: 200 * time.Millisecond})
	testenv.Must(t, err, "purger")
	defer q.Close()
	q.Epoch(3)
	testenv.WaitFor(t, "the purge given up", testenv.Patience, func() bool { return value(q.m.givenUp) == 1 })
	if n := len(hang.snapshot()); n != 2 {
		t.Fatalf("%d calls, want 2 (one retry)", n)
	}
}

// TestCloseSendsWhatIsPending: an epoch held back by MinInterval is
// purged when the process stops.
func TestCloseSendsWhatIsPending(t *testing.T) {
	t.Parallel()
	d := newCDN(t)
	p, err := New(Config{URL: d.srv.URL, MinInterval: time.Hour})
	testenv.Must(t, err, "purger")
	p.Epoch(1)
	testenv.WaitFor(t, "the first call", testenv.Patience, func() bool { return len(d.snapshot()) == 1 })
	p.Epoch(2) // waits an hour for its turn
	p.Close()
	if calls := d.snapshot(); len(calls) != 2 || calls[1].epoch != 2 {
		t.Fatalf("calls %+v, want epoch 2 sent at close", calls)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(nil))
	if err != nil || c.Enabled() || c.Timeout != 5*time.Second || c.Retries != 3 || c.MinInterval != time.Second {
		t.Fatalf("defaults %+v %v", c, err)
	}
	c, err = ConfigFromEnv(env(map[string]string{"ATTESTD_PURGE_URL": "https://api.cdn.example/zones/z/purge_cache",
		"ATTESTD_PURGE_HEADER": "Authorization: Bearer a:b", "ATTESTD_PURGE_RETRIES": "0", "ATTESTD_PURGE_MIN_INTERVAL": "0s"}))
	if err != nil || !c.Enabled() || c.HeaderName != "Authorization" || c.HeaderValue != "Bearer a:b" || !c.NoRetries || c.MinInterval >= 0 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"ATTESTD_PURGE_URL": "ftp://x/y"}, {"ATTESTD_PURGE_URL": "/relative"}, {"ATTESTD_PURGE_URL": "http://"},
		{"ATTESTD_PURGE_HEADER": "no colon"}, {"ATTESTD_PURGE_HEADER": "Bad Name: v"}, {"ATTESTD_PURGE_HEADER": "X-Key:"},
		{"ATTESTD_PURGE_HEADER": "X-Key: a\rb"}, {"ATTESTD_PURGE_TIMEOUT": "1ms"}, {"ATTESTD_PURGE_RETRIES": "11"},
	} {
		if _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
	if _, err := New(Config{URL: "not a url"}); err == nil {
		t.Error("New accepted a relative URL")
	}
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return -1
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
