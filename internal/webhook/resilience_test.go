package webhook_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/redis/go-redis/v9"
)

// waitAll waits until the receiver got every event of ids at least once.
func waitAll(t *testing.T, rc *receiver, ids []int64, within time.Duration) {
	t.Helper()
	testenv.WaitForState(t, "every event at the receiver", within, testenv.Every(50*time.Millisecond, func() (bool, string) {
		got := rc.eventIDs(t)
		missing := 0
		for _, id := range ids {
			if got[webhook.EventID(id)] == 0 {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d events missing", missing, len(ids))
	}))
}

// TestRedisRestartLosesNothing: Redis dies mid-delivery and comes back
// empty (no persistence); events from before, during and after all arrive.
func TestRedisRestartLosesNothing(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	h := newHarness(t, harnessOpt{redisURL: r.URL})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	h.startWorker(t, h.cfg, "w2")
	ids := insertEvents(t, h.env.Store, 300, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries under way", 30*time.Second, func() bool { return len(rc.deliveries()) >= 20 })
	r.Kill()
	ids = append(ids, insertEvents(t, h.env.Store, 100, agentA, "ToolCall")...) // while Redis is down
	r2, err := devstack.StartRedis(context.Background(), r.Dir, r.Port())
	testenv.Must(t, err, "restart redis")
	t.Cleanup(r2.Stop)
	ids = append(ids, insertEvents(t, h.env.Store, 100, agentA, "ToolCall")...)
	waitAll(t, rc, ids, 90*time.Second)
	t.Logf("%d events, %d requests (duplicates are allowed: at least once)", len(ids), len(rc.deliveries()))
}

// TestRedisFlushLosesNothing: every key vanishes mid-delivery, including
// retries waiting in the sorted sets; the outbox and the deliveries in
// PostgreSQL bring everything back.
func TestRedisFlushLosesNothing(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	cfg := testConfig(t)
	// Retries wait long enough to be in the retry set when it is flushed.
	cfg.Schedule = []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}
	h := newHarness(t, harnessOpt{redisURL: r.URL, cfg: &cfg})
	key := h.Key(t, "acme")
	// The flaky receiver fails until the flush: its first jobs wait in
	// the retry set, its circuit opens and the others are parked, and the
	// flush loses all of that.
	var flushed atomic.Bool
	flaky := newReceiver(t, func(int, *http.Request) int {
		if flushed.Load() {
			return http.StatusNoContent
		}
		return http.StatusInternalServerError
	})
	steady := newReceiver(t, nil)
	h.Create(t, key, map[string]any{"url": flaky.URL(), "events": []string{"attestation.created"}})
	h.Create(t, key, map[string]any{"url": steady.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, cfg, "w1")
	ids := insertEvents(t, h.env.Store, 100, agentA, "ToolCall")
	testenv.WaitFor(t, "retries waiting and jobs parked", 30*time.Second, func() bool {
		var scheduled, parked int64
		for p := range cfg.Partitions {
			d, err := h.q.Depth(context.Background(), p, time.Now())
			testenv.Must(t, err, "depth")
			scheduled, parked = scheduled+d.Scheduled, parked+d.Parked
		}
		return len(flaky.deliveries()) >= 5 && scheduled >= 1 && parked >= 1
	})
	testenv.Must(t, h.rdb.FlushAll(context.Background()).Err(), "flushall")
	flushed.Store(true)
	ids = append(ids, insertEvents(t, h.env.Store, 100, agentA, "ToolCall")...)
	waitAll(t, steady, ids, 90*time.Second)
	waitAll(t, flaky, ids, 90*time.Second)
}

// TestWorkersOnRedisCluster runs two workers on a three-master Redis
// Cluster: every event arrives, and the partitions live on several masters.
func TestWorkersOnRedisCluster(t *testing.T) {
	t.Parallel()
	cl := testenv.OwnRedisCluster(t, 3)
	env := apptest.NewEnv(t, apptest.Options{}) // its cache uses the shared Redis; the queue the cluster
	cfg := testConfig(t)
	cfg.Partitions = 6
	newClient := func() redis.UniversalClient {
		opt, err := redis.ParseClusterURL(cl.URL)
		testenv.Must(t, err, "cluster url")
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
		c := redis.NewClusterClient(opt)
		t.Cleanup(func() { c.Close() })
		return c
	}
	rc := newReceiver(t, nil)
	acc, _, err := env.Store.EnsureAccount(context.Background(), "acme")
	testenv.Must(t, err, "account")
	secret, _ := signature.NewSecret()
	var secrets []string
	for i := range 4 { // several webhooks: several partitions
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := "wh_" + hex.EncodeToString(b[:])
		sealed, keyID, err := cfg.Keys.Seal([]byte(secret), []byte(id))
		testenv.Must(t, err, "seal")
		_, err = env.Store.InsertWebhook(context.Background(), store.Webhook{ID: id, AccountID: acc.ID, URL: rc.URL() + "?w=" + string(rune('a'+i)),
			Events: []string{"attestation.created"}, SecretSealed: sealed, SecretKeyID: keyID}, 0)
		testenv.Must(t, err, "insert webhook")
		secrets = append(secrets, secret)
	}
	startWorkerOn(t, env, newClient(), cfg, "c1")
	startWorkerOn(t, env, newClient(), cfg, "c2")
	ids := insertEvents(t, env.Store, 100, agentA, "ToolCall")
	testenv.WaitFor(t, "every delivery", 60*time.Second, func() bool {
		seen := map[string]bool{}
		for _, d := range rc.deliveries() {
			seen[d.Header.Get("webhook-id")] = true
		}
		return len(seen) == 4*len(ids)
	})
	for _, d := range rc.deliveries() {
		checkSignatures(t, secrets[0], d)
	}
	// The partitions' keys spread over the masters.
	admin := newClient().(*redis.ClusterClient)
	masters := map[string]bool{}
	for p := range cfg.Partitions {
		slot, err := admin.ClusterKeySlot(context.Background(), env.Prefix+"{wh:"+string(rune('0'+p))+"}:records").Result()
		testenv.Must(t, err, "slot")
		masters[cl.MasterOf(int(slot)).Addr] = true
	}
	if len(masters) < 2 {
		t.Errorf("all %d partitions on one master", cfg.Partitions)
	}
}

// TestSeededEventsReachSubscribers: events written by the one write path
// (here, the demo seed) travel the pipeline like indexed ones.
func TestSeededEventsReachSubscribers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": webhook.Events})
	h.startWorker(t, h.cfg, "w1")
	_, err := seed.Run(context.Background(), h.env.Store, seed.Options{Agents: 4, Attestations: 60, Seed: 11, BatchSize: 25, Logger: apptest.Logger()})
	testenv.Must(t, err, "seed")
	var want int
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM outbox`).Scan(&want), "count")
	if want < 64 {
		t.Fatalf("the seed wrote %d outbox rows", want)
	}
	testenv.WaitFor(t, "every seeded event", 30*time.Second, func() bool { return len(rc.eventIDs(t)) == want })
	types := map[string]int{}
	for _, d := range rc.deliveries() {
		checkSignatures(t, w.Secret, d)
		_, typ := d.event(t)
		types[typ]++
	}
	if types["attestation.created"] < 60 || types["agent.registered"] < 4 {
		t.Fatalf("types received: %v", types)
	}
}
