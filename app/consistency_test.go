package app_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// maxSlot returns the highest slot stored.
func maxSlot(t *testing.T, env *apptest.Env) uint64 {
	t.Helper()
	var s int64
	if err := env.Store.Pool().QueryRow(context.Background(), "SELECT COALESCE(max(slot), 0) FROM attestations").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return uint64(s)
}

func TestCursorWalkSeesEveryRecordOnceWhileAttestationsArrive(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 4, Attestations: 2000})
	node := env.StartNode(t, apptest.NodeOptions{})
	var existing []string
	rows, err := env.Store.Pool().Query(context.Background(), "SELECT pda FROM attestations ORDER BY ts DESC, slot DESC, pda DESC")
	testenv.Must(t, err, "query")
	for rows.Next() {
		var p string
		testenv.Must(t, rows.Scan(&p), "scan")
		existing = append(existing, p)
	}
	rows.Close()

	// A writer adds newer attestations while we walk.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var added atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		slot := maxSlot(t, env)
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			recs := seed.NewAttestations(env.Seeded.Agents, 5, time.Now(), slot+i*1000, i)
			if _, err := env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
				t.Error(err)
				return
			}
			added.Add(5)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var walked []attestation.Attestation
	path := "/attestations?limit=37"
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("walk does not end")
		}
		var lr listResp
		node.Get(t, path).JSON(t, &lr)
		walked = append(walked, lr.Data...)
		if lr.Pagination.NextCursor == "" {
			break
		}
		path = "/attestations?limit=37&cursor=" + url.QueryEscape(lr.Pagination.NextCursor)
	}
	close(stop)
	wg.Wait()
	if added.Load() == 0 {
		t.Fatal("the writer added nothing during the walk")
	}
	seen := map[string]int{}
	for i, a := range walked {
		seen[a.PDA]++
		if seen[a.PDA] > 1 {
			t.Fatalf("%s returned twice", a.PDA)
		}
		if i > 0 && !before(walked[i-1], a) {
			t.Fatalf("order broken at %d", i)
		}
	}
	for _, p := range existing {
		if seen[p] != 1 {
			t.Fatalf("record %s present before the walk was not returned", p)
		}
	}
	// Bad cursors are a clear 400.
	for _, bad := range []string{"abc", "!!", url.QueryEscape("MTIzLjQ1Ni54"), "cursor&offset=5"} {
		if r := node.Get(t, "/attestations?cursor="+bad); r.Status != 400 {
			t.Errorf("cursor=%s: %d", bad, r.Status)
		}
	}
}

func TestWriteOnOneNodeIsVisibleOnAnother(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 300})
	a := env.StartNode(t, apptest.NodeOptions{})
	b := env.StartNode(t, apptest.NodeOptions{})
	agent := env.Seeded.Agents[1].PDA.String()
	paths := []string{"/stats", "/attestations", "/attestations?agentPda=" + agent, "/agents/" + agent, "/agents/" + agent + "/stats"}
	// Warm both nodes' caches.
	for _, n := range []*apptest.Node{a, b} {
		for _, p := range paths {
			n.Get(t, p)
		}
	}
	recs := seed.NewAttestations(env.Seeded.Agents[1:2], 3, time.Now().Add(time.Hour), maxSlot(t, env)+10, 99)
	newest := recs[0].PDA
	if r := b.Get(t, "/attestations/"+newest); r.Status != 404 {
		t.Fatalf("not yet written, got %d", r.Status)
	}
	// The write goes through node A's store (its cache bumps the epoch).
	if _, err := a.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	// Well within the cache's IndexedTTL (30 s), after which node B would
	// see it without the epoch bump: the deadline is the assertion.
	testenv.WaitFor(t, "node B sees the new attestation in every view", 20*time.Second, func() bool {
		var st struct{ Attestations int64 }
		b.Get(t, "/stats").JSON(t, &st)
		var lr listResp
		b.Get(t, "/attestations?agentPda="+agent).JSON(t, &lr)
		var ag struct{ Data attestation.Agent }
		b.Get(t, "/agents/"+agent).JSON(t, &ag)
		found := b.Get(t, "/attestations/"+newest).Status == 200
		return st.Attestations == 303 && lr.Data[0].Timestamp.Equal(recs[0].Timestamp.Truncate(time.Second)) &&
			ag.Data.Metrics.AttestationCount == lr.Pagination.Total && found
	})
}

func TestRedisKilledReadsContinueFromPostgres(t *testing.T) {
	t.Parallel()
	r := testenv.OwnRedis(t)
	env := apptest.NewEnvOn(t, testenv.Database(t), r.URL, "k:", apptest.Options{Agents: 3, Attestations: 500})
	node := env.StartNode(t, apptest.NodeOptions{})
	var lr listResp
	node.Get(t, "/attestations?limit=5").JSON(t, &lr)
	r.Kill()
	// Every route still answers, uncached ones straight from Postgres.
	for _, p := range []string{"/stats", "/attestations?limit=7", "/attestations/" + lr.Data[0].PDA, "/agents/" + lr.Data[0].AgentPDA,
		"/agents/" + lr.Data[0].AgentPDA + "/stats", "/attestations?actionType=Decision"} {
		if res := node.Get(t, p); res.Status != 200 {
			t.Fatalf("%s with redis down: %d %s", p, res.Status, res.Body)
		}
	}
	var h app.Health
	res := node.Get(t, "/health")
	res.JSON(t, &h)
	if res.Status != 200 || h.Status != "degraded" || h.Redis != "down" || h.Postgres != "ok" ||
		len(h.Reasons) != 1 || !strings.HasPrefix(h.Reasons[0], "redis: down") {
		t.Fatalf("health with redis down: %d %+v", res.Status, h)
	}
	// New data is visible while Redis is down (nothing stale is served).
	recs := seed.NewAttestations(env.Seeded.Agents, 2, time.Now().Add(time.Hour), maxSlot(t, env)+10, 5)
	if _, err := node.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	var st struct{ Attestations int64 }
	node.Get(t, "/stats").JSON(t, &st)
	if st.Attestations != 502 {
		t.Fatalf("stats while redis down: %d, want 502", st.Attestations)
	}
}

func TestPostgresStoppedCachedReadsContinue(t *testing.T) {
	t.Parallel()
	pg := testenv.OwnPostgres(t)
	url, prefix := testenv.Redis(t)
	env := apptest.NewEnvOn(t, testenv.DatabaseOn(t, pg.URL), url, prefix, apptest.Options{Agents: 3, Attestations: 500})
	node := env.StartNode(t, apptest.NodeOptions{})
	var lr listResp
	node.Get(t, "/attestations?limit=5").JSON(t, &lr)
	cached := []string{"/stats", "/attestations?limit=5", "/attestations/" + lr.Data[1].PDA, "/agents/" + lr.Data[0].AgentPDA}
	// Asked at two nodes: Redis keeps an answer at its second miss (both
	// at the newest epoch: a per-epoch answer's key holds the epoch).
	second := env.StartNode(t, apptest.NodeOptions{})
	node.SettleEpoch(t)
	second.SettleEpoch(t)
	for _, p := range cached {
		node.Get(t, p)
		second.Get(t, p)
	}
	pg.Stop()
	for _, p := range cached {
		if res := node.Get(t, p); res.Status != 200 {
			t.Fatalf("cached %s with postgres down: %d %s", p, res.Status, res.Body)
		}
	}
	// A third node sharing Redis answers the same cached reads from Redis.
	other := env.StartNode(t, apptest.NodeOptions{})
	for _, p := range cached {
		if res := other.Get(t, p); res.Status != 200 {
			t.Fatalf("cached %s on a fresh node with postgres down: %d %s", p, res.Status, res.Body)
		}
	}
	// Uncached reads are 503 UNAVAILABLE, never a 500, and counted as
	// 503s, apart from other 5xx (AttestdUnavailableAnswers, not
	// AttestdHigh5xxRatio).
	for _, p := range []string{"/attestations?limit=9", "/agents/" + lr.Data[0].AgentPDA + "/stats"} {
		res := node.Get(t, p)
		if res.Status != 503 || res.ErrorCode() != "UNAVAILABLE" {
			t.Fatalf("uncached %s: %d %s", p, res.Status, res.Body)
		}
	}
	const seconds = "attestd_http_request_duration_seconds"
	if n503, n5xx := metricCount(t, node.Reg, seconds, "status", "503"), metricCount(t, node.Reg, seconds, "status", "5xx"); n503 < 2 || n5xx != 0 {
		t.Errorf("requests counted: %d as 503, %d as 5xx; want the 503s apart", n503, n5xx)
	}
	var h app.Health
	res := node.Get(t, "/health")
	res.JSON(t, &h)
	if res.Status != 200 || h.Status != "degraded" || h.Postgres != "down" ||
		len(h.Reasons) == 0 || !strings.HasPrefix(h.Reasons[0], "postgres: down") {
		t.Fatalf("health with postgres down: %d %+v", res.Status, h)
	}
}

// TestInvalidationSurvivesRedisReset: after Redis restarts empty or is
// flushed, the epoch it forgot must not make nodes ignore announcements:
// a new write is visible at once, not when the cached answers expire.
func TestInvalidationSurvivesRedisReset(t *testing.T) {
	t.Parallel()
	for _, reset := range []string{"flush", "restart"} {
		t.Run(reset, func(t *testing.T) {
			t.Parallel()
			r := testenv.OwnRedis(t)
			env := apptest.NewEnvOn(t, testenv.Database(t), r.URL, "k:", apptest.Options{Agents: 2, Attestations: 100})
			node := env.StartNode(t, apptest.NodeOptions{})
			ctx := context.Background()
			for i := 0; i < 50; i++ { // epochs a reset Redis will not reach soon by counting
				testenv.Must(t, node.Cache.BumpEpoch(ctx, 0), "bump")
			}
			node.SettleEpoch(t)
			var before struct{ Attestations int64 }
			node.Get(t, "/stats").JSON(t, &before)
			switch reset {
			case "flush":
				testenv.Must(t, node.Redis.FlushAll(ctx).Err(), "flush")
			case "restart":
				port := r.Port()
				r.Stop()
				again, err := devstack.StartRedis(ctx, testenv.TempDir(t, "redis-again-"), port)
				testenv.Must(t, err, "restart redis")
				t.Cleanup(again.Stop)
				testenv.WaitFor(t, "the node reaches Redis again", testenv.Patience, func() bool { return !node.Cache.Degraded() && node.Redis.Ping(ctx).Err() == nil })
			}
			recs := seed.NewAttestations(env.Seeded.Agents, 1, time.Now().Add(time.Hour), maxSlot(t, env)+10, 3)
			if _, err := env.Store.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
				t.Fatal(err)
			}
			// Within IndexedTTL (30 s), as above.
			testenv.WaitFor(t, "stats count the new attestation", 20*time.Second, func() bool {
				var st struct{ Attestations int64 }
				node.Get(t, "/stats").JSON(t, &st)
				return st.Attestations == before.Attestations+int64(len(recs))
			})
		})
	}
}

// metricCount sums the sample counts of histogram name in reg whose
// labels include label=value.
func metricCount(t *testing.T, reg prometheus.Gatherer, name, label, value string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	testenv.Must(t, err, "gather metrics")
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}
