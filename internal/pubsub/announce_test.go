package pubsub

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
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
	select {
	case <-l.Subscribed():
	case <-time.After(testenv.Patience):
		t.Fatalf("Subscribed not closed within %s", testenv.Patience)
	}
	if n := resyncs.Load(); n != 1 {
		t.Fatalf("Subscribed closed after %d resyncs, want 1 (Resync runs first)", n)
	}
	testenv.Must(t, Publish(context.Background(), rdb, "ch", "hello", time.Second), "publish")
	testenv.WaitFor(t, "message", testenv.Patience, func() bool { v, _ := last.Load().(string); return v == "hello" })

	// The server restarts: the listener resubscribes and resyncs.
	port := r.Port()
	r.Kill()
	r2, err := devstack.StartRedis(context.Background(), testenv.TempDir(t, "announce-"), port)
	testenv.Must(t, err, "restart redis")
	t.Cleanup(r2.Stop)
	testenv.WaitFor(t, "resync after reconnect", testenv.Patience, func() bool { return resyncs.Load() >= 2 })
	testenv.Must(t, Publish(context.Background(), rdb, "ch", "again", time.Second), "publish")
	testenv.WaitFor(t, "message after reconnect", testenv.Patience, func() bool { v, _ := last.Load().(string); return v == "again" })
}

func TestCloseReturnsWhileBlocked(t *testing.T) {
	url, prefix := testenv.Redis(t)
	l := Listen(client(t, url), prefix+"quiet", Handlers{})
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(testenv.Patience):
		t.Fatal("Close blocked on a listener waiting for messages")
	}
}

// TestRedisCluster: on a Redis Cluster an announcement published on any
// master reaches listeners subscribed on every master, and a listener on a
// cluster client hears it too (nodes of one fleet may be connected to
// different masters).
func TestRedisCluster(t *testing.T) {
	cl := testenv.OwnRedisCluster(t, 3)
	var heard [4]atomic.Value
	var subscribed atomic.Int32
	listen := func(i int, rdb redis.UniversalClient) {
		l := Listen(rdb, "ch", Handlers{
			Resync:  func(context.Context) { subscribed.Add(1) },
			Message: func(p string) { heard[i].Store(p) },
		})
		t.Cleanup(l.Close)
	}
	for i, n := range cl.Nodes {
		listen(i, client(t, "redis://"+n.Addr))
	}
	opt, err := redis.ParseClusterURL(cl.URL)
	testenv.Must(t, err, "parse cluster url")
	cc := redis.NewClusterClient(opt)
	t.Cleanup(func() { cc.Close() })
	listen(3, cc)
	testenv.WaitFor(t, "four subscriptions", testenv.Patience, func() bool { return subscribed.Load() == 4 })

	for i, n := range cl.Nodes {
		msg := "from-" + n.Addr
		testenv.Must(t, Publish(context.Background(), client(t, "redis://"+n.Addr), "ch", msg, time.Second), "publish on %s", n.Addr)
		for j := range heard {
			testenv.WaitFor(t, fmt.Sprintf("listener %d hears what master %d published", j, i), testenv.Patience, func() bool {
				v, _ := heard[j].Load().(string)
				return v == msg
			})
		}
	}
	testenv.Must(t, Publish(context.Background(), cc, "ch", "via-cluster-client", time.Second), "publish via cluster client")
	for j := range heard {
		testenv.WaitFor(t, fmt.Sprintf("listener %d hears the cluster client", j), testenv.Patience, func() bool {
			v, _ := heard[j].Load().(string)
			return v == "via-cluster-client"
		})
	}
}
