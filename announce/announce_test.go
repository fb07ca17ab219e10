package announce

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/devstack"
	"github.com/attestd/attestd/testenv"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func client(t *testing.T, url string) *redis.Client {
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse")
	opt.MaxRetries = 0
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMessagesAndResyncAfterReconnect(t *testing.T) {
	r := testenv.OwnRedis(t)
	rdb := client(t, r.URL)
	var resyncs atomic.Int32
	var last atomic.Value
	l := Listen(rdb, "ch", Handlers{
		Resync:  func(context.Context) { resyncs.Add(1) },
		Message: func(p string) { last.Store(p) },
	})
	defer l.Close()
	waitFor(t, "first subscription", func() bool { return resyncs.Load() == 1 })
	testenv.Must(t, Publish(context.Background(), rdb, "ch", "hello", time.Second), "publish")
	waitFor(t, "message", func() bool { v, _ := last.Load().(string); return v == "hello" })

	// The server restarts: the listener resubscribes and resyncs.
	port := r.Port()
	r.Kill()
	r2, err := devstack.StartRedis(context.Background(), testenv.TempDir(t, "announce-"), port)
	testenv.Must(t, err, "restart redis")
	t.Cleanup(r2.Stop)
	waitFor(t, "resync after reconnect", func() bool { return resyncs.Load() >= 2 })
	testenv.Must(t, Publish(context.Background(), rdb, "ch", "again", time.Second), "publish")
	waitFor(t, "message after reconnect", func() bool { v, _ := last.Load().(string); return v == "again" })
}

func TestCloseReturnsWhileBlocked(t *testing.T) {
	url, prefix := testenv.Redis(t)
	l := Listen(client(t, url), prefix+"quiet", Handlers{})
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a listener waiting for messages")
	}
}
