// Command webhookrecovery-bench measures a webhook recovery (POST
// /webhooks/:id/recover) on loopback: one webhook whose receiver was down
// has -failed failed deliveries; its recovery runs while live events keep
// flowing to -live other webhooks at -rate events per second. It reports
// the recovery's deliveries per second (from the request to the last
// recovered delivery's arrival) and the live deliveries' latency (commit
// to arrival) without a recovery and during it, with one webhook worker
// (default configuration but no per-endpoint cap and no per-host cap:
// every receiver is on 127.0.0.1).
//
//	go run ./bench/webhookrecovery [-failed 100000] [-recovering 4] [-live 4] [-rate 100] [-baseline 15s]
//		[-recovery-rate N] [-recovery-concurrency N] [-cpuprofile file] [-v]
//
// Each live delivery's latency is also split into stages, from the log:
// commit -> relay (outbox.published_at), relay -> fan-out
// (dispatched_at), fan-out -> attempt (the first attempt's start),
// attempt -> arrival.
//
// It starts a throwaway Postgres and Redis (devstack) unless DATABASE_URL
// (an admin URL) and REDIS_URL are set.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/benchkit"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/webhook/keyring"
	"github.com/attestd/attestd/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

var (
	cpuProfile string
	recConc    int
)

func main() {
	failed := flag.Int("failed", 100_000, "failed deliveries to recover, spread over -recovering webhooks")
	recovering := flag.Int("recovering", 4, "webhooks whose receivers were down, each recovered at once")
	live := flag.Int("live", 4, "live webhooks, each receiving every live event")
	rate := flag.Int("rate", 100, "live events per second")
	baseline := flag.Duration("baseline", 15*time.Second, "how long live events run before the recovery (the baseline)")
	recRate := flag.Int("recovery-rate", 0, "the worker's ATTESTD_WEBHOOK_RECOVERY_RATE (0: the default)")
	flag.IntVar(&recConc, "recovery-concurrency", 0, "the worker's ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY (0: the default)")
	verbose := flag.Bool("v", false, "show the worker's logs")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the recovery to this file")
	flag.Parse()
	if err := run(context.Background(), *failed, *recovering, *live, *rate, *baseline, *recRate, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "webhookrecovery-bench:", err)
		os.Exit(1)
	}
}

// receiver records when each event first arrived, and its duplicates.
type receiver struct {
	mu       sync.Mutex
	first    map[int64]time.Time
	requests atomic.Int64
	dups     atomic.Int64
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	// Only a verification request is decoded (the bench's receivers must
	// not spend the CPU the worker is measured with).
	if !bytes.Contains(body, []byte(`"evt_`)) {
		if answer, ok := webhook.ChallengeAnswer(body); ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
	}
	r.requests.Add(1)
	now := time.Now()
	if i := bytes.Index(body, []byte(`"evt_`)); i >= 0 {
		rest := body[i+5:]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			if id, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				r.mu.Lock()
				if _, ok := r.first[id]; ok {
					r.dups.Add(1)
				} else {
					r.first[id] = now
				}
				r.mu.Unlock()
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.first)
}

func startReceiver() (*receiver, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	r := &receiver{first: map[int64]time.Time{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return r, "http://" + ln.Addr().String() + "/hook", nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const payload = `{"pda":"7Np41oeYqPefeNQEHSv1UDhYrehxin3NStELsSKCT4K2","agentPda":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",` +
	`"agentId":"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v","actionType":"ToolCall","actionHash":"` +
	"abababababababababababababababababababababababababababababababab" + `","txSignature":"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW",` +
	`"slot":312456789,"timestamp":"2026-11-21T10:00:00Z","privacyMode":false,"agentSignature":"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW","commitment":"confirmed"}`

func run(ctx context.Context, failed, recovering, live, rate int, baseline time.Duration, recRate int, verbose bool) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteRedisLogs(quiet)
	log := quiet
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	bs, err := benchkit.OpenStores(ctx, "webhookrecovery_bench", store.Options{MaxConns: 16})
	if err != nil {
		return err
	}
	defer bs.Close()
	st := bs.Store
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return err
	}
	ropt.PoolSize, ropt.ReadTimeout, ropt.WriteTimeout = 128, 2*time.Second, 2*time.Second
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	spec, err := keyring.Generate("bench")
	if err != nil {
		return err
	}
	keys, err := keyring.Parse(spec)
	if err != nil {
		return err
	}
	acc, _, err := st.EnsureAccount(ctx, "bench")
	if err != nil {
		return err
	}
	newHook := func(url string, events []string) (string, error) {
		id := "wh_" + randHex(12)
		secret, _ := signature.NewSecret()
		sealed, keyID, err := keys.Seal([]byte(secret), []byte(id))
		if err != nil {
			return "", err
		}
		_, err = st.InsertWebhook(ctx, store.Webhook{ID: id, AccountID: acc.ID, URL: url, Events: events, SecretSealed: sealed, SecretKeyID: keyID}, 0)
		return id, err
	}
	// The recovering webhooks subscribe to another event type than the
	// live ones, so live events are not delivered to them.
	var recRecv []*receiver
	var recIDs []string
	for range recovering {
		r, url, err := startReceiver()
		if err != nil {
			return err
		}
		id, err := newHook(url, []string{store.EventAgentRevoked})
		if err != nil {
			return err
		}
		recRecv, recIDs = append(recRecv, r), append(recIDs, id)
	}
	var liveRecv []*receiver
	liveIDs := map[*receiver]string{}
	ids := append([]string(nil), recIDs...)
	for range live {
		r, url, err := startReceiver()
		if err != nil {
			return err
		}
		id, err := newHook(url, []string{store.EventAttestationCreated})
		if err != nil {
			return err
		}
		liveRecv, ids = append(liveRecv, r), append(ids, id)
		liveIDs[r] = id
	}
	// The outage, already over: -failed events an hour ago, each delivery
	// failed after 7 attempts, dispatched long since.
	t0 := time.Now()
	per := failed / recovering
	for _, id := range recIDs {
		if _, err := st.Pool().Exec(ctx, `WITH ev AS (
				INSERT INTO outbox (event_type, payload, created_at, dispatched_at, published_at)
				SELECT 'agent.revoked', jsonb_set($2::jsonb, '{slot}', to_jsonb(i)), now() - interval '1 hour' + i * interval '1 ms',
					now() - interval '1 hour', now() - interval '1 hour'
				FROM generate_series(1, $1) i RETURNING id, created_at)
			INSERT INTO webhook_deliveries (id, webhook_id, outbox_id, status, attempts, created_at, updated_at)
			SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), $3, ev.id, 'failed', 7, ev.created_at, ev.created_at FROM ev`,
			per, payload, id); err != nil {
			return err
		}
	}
	failed = per * recovering
	if _, err := st.Pool().Exec(ctx, `ANALYZE`); err != nil {
		return err
	}
	fmt.Printf("setup: %d failed deliveries written in %s\n", failed, time.Since(t0).Round(time.Millisecond))

	cfg := webhook.DefaultConfig()
	cfg.Keys, cfg.AllowLoopback, cfg.MetricsAddr, cfg.HostRate, cfg.UnverifiedHostRate, cfg.EndpointRate = keys, true, "", 0, 0, 0
	if recRate > 0 {
		cfg.RecoveryRate = recRate
	}
	if recConc > 0 {
		cfg.RecoveryConcurrency = recConc
	}
	reg := prometheus.NewRegistry()
	w, err := webhook.NewWorker(webhook.WorkerOptions{Store: st, Queue: queue.New(rdb, "bench:", cfg.Partitions), Config: cfg,
		Logger: log, Registerer: reg})
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if err := benchkit.WaitVerified(ctx, st, ids); err != nil {
		return err
	}
	fmt.Printf("load average %s\n", benchkit.LoadAvg())
	fmt.Printf("one worker, GOMAXPROCS=%d, concurrency %d, %d per endpoint, recovery rate %d/s, recovery concurrency %d, %d partitions; %d live webhooks at %d events/s\n\n",
		runtime.GOMAXPROCS(0), cfg.Concurrency, cfg.EndpointConcurrency, cfg.RecoveryRate, cfg.RecoveryConcurrency, cfg.Partitions, live, rate)

	// Live events all along: their commit times by id.
	var mu sync.Mutex
	created := map[int64]time.Time{}
	lctx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	liveDone := make(chan error, 1)
	go func() {
		per := max(rate/50, 1) // a write every 20 ms
		every := time.Second * time.Duration(per) / time.Duration(rate)
		next := time.Now()
		for lctx.Err() == nil {
			rows, err := st.Pool().Query(ctx, `INSERT INTO outbox (event_type, payload)
				SELECT 'attestation.created', $2::jsonb FROM generate_series(1, $1) RETURNING id, created_at`, per, payload)
			if err != nil {
				liveDone <- err
				return
			}
			mu.Lock()
			for rows.Next() {
				var id int64
				var at time.Time
				if err := rows.Scan(&id, &at); err == nil {
					created[id] = at
				}
			}
			mu.Unlock()
			rows.Close()
			_, _ = st.Pool().Exec(ctx, `SELECT pg_notify($1, '')`, store.OutboxChannel)
			next = next.Add(every)
			time.Sleep(time.Until(next))
		}
		liveDone <- nil
	}()
	baseStart := time.Now()
	time.Sleep(baseline)
	baseEnd := time.Now()

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The recoveries, as POST /webhooks/:id/recover starts them.
	recStart := time.Now()
	for _, id := range recIDs {
		r, _, err := st.StartRecovery(ctx, acc.ID, store.Recovery{ID: "rcv_" + randHex(12), WebhookID: id,
			Since: time.Now().Add(-2 * time.Hour), Until: time.Now(), OnlyFailed: true})
		if err != nil {
			return err
		}
		fmt.Printf("recovery %s: %d deliveries to queue again (answered in %s)\n", r.ID, r.Total, time.Since(recStart).Round(time.Millisecond))
	}
	recovered := func() int {
		n := 0
		for _, r := range recRecv {
			n += r.count()
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Minute)
	lastShown, lastN := time.Now(), 0
	for recovered() < failed {
		if time.Since(lastShown) >= 5*time.Second {
			n := recovered()
			fmt.Printf("  %5.0f s: %d recovered (%.0f/s)\n", time.Since(recStart).Seconds(), n, float64(n-lastN)/time.Since(lastShown).Seconds())
			lastShown, lastN = time.Now(), n
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d recovered deliveries after 10 minutes", recovered(), failed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	recEnd := time.Now()
	stopLive()
	if err := <-liveDone; err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // the last live deliveries arrive
	var lastRec time.Time
	var requests, dups int64
	for _, r := range recRecv {
		r.mu.Lock()
		for _, at := range r.first {
			if at.After(lastRec) {
				lastRec = at
			}
		}
		r.mu.Unlock()
		requests, dups = requests+r.requests.Load(), dups+r.dups.Load()
	}
	took := lastRec.Sub(recStart)
	fmt.Printf("recovery: %d deliveries to %d webhooks in %s: %.0f deliveries/s; %d requests (%d duplicates)\n\n", failed, recovering,
		took.Round(time.Millisecond), float64(failed)/took.Seconds(), requests, dups)

	// The stages of each live delivery, from the log: the relay's
	// publication (outbox.published_at), the fan-out (dispatched_at), the
	// first attempt's start (webhook_attempts.at), the arrival.
	type stamps struct{ published, dispatched, attempt time.Time }
	stages := map[[2]any]stamps{}
	rows, err := st.Pool().Query(ctx, `SELECT o.id, d.webhook_id, o.published_at, o.dispatched_at, a.at
		FROM outbox o JOIN webhook_deliveries d ON d.outbox_id = o.id
		JOIN webhook_attempts a ON a.delivery_id = d.id AND a.attempt = 1
		WHERE o.event_type = 'attestation.created'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var hook string
		var s stamps
		if err := rows.Scan(&id, &hook, &s.published, &s.dispatched, &s.attempt); err != nil {
			rows.Close()
			return err
		}
		stages[[2]any{id, hook}] = s
	}
	rows.Close()
	fmt.Printf("load average after: %s\n", benchkit.LoadAvg())

	mu.Lock()
	defer mu.Unlock()
	report := func(name string, from, to time.Time) {
		var relay, fan, queued, send []time.Duration
		var lat []time.Duration
		missing := 0
		for id, c := range created {
			if c.Before(from) || !c.Before(to) {
				continue
			}
			for _, lr := range liveRecv {
				lr.mu.Lock()
				at, ok := lr.first[id]
				lr.mu.Unlock()
				if !ok {
					missing++
					continue
				}
				lat = append(lat, at.Sub(c))
				if s, ok := stages[[2]any{id, liveIDs[lr]}]; ok {
					relay, fan = append(relay, s.published.Sub(c)), append(fan, s.dispatched.Sub(s.published))
					queued, send = append(queued, s.attempt.Sub(s.dispatched)), append(send, at.Sub(s.attempt))
				}
			}
		}
		if len(lat) == 0 {
			fmt.Printf("%s: no live deliveries\n", name)
			return
		}
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
		fmt.Printf("%s: %d live deliveries, latency p50 %s  p99 %s  max %s  (%d missing)\n", name, len(lat), q(0.5), q(0.99), q(1), missing)
		for _, st := range []struct {
			name string
			d    []time.Duration
		}{{"commit -> relay", relay}, {"relay -> fan-out", fan}, {"fan-out -> attempt", queued}, {"attempt -> arrival", send}} {
			fmt.Printf("    %-20s p50 %-8s p99 %s\n", st.name, benchkit.Percentile(st.d, 50).Round(time.Millisecond),
				benchkit.Percentile(st.d, 99).Round(time.Millisecond))
		}
	}
	report("live without a recovery", baseStart.Add(2*time.Second), baseEnd)
	report("live during the recovery", recStart, recEnd)
	liveDups := int64(0)
	for _, lr := range liveRecv {
		liveDups += lr.dups.Load()
	}
	fmt.Printf("live duplicates: %d\n", liveDups)
	return nil
}
