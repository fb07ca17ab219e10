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
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/prometheus/client_golang/prometheus"
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

// bench is one run: the rig, the recovering webhooks' receivers and the
// live ones', and the live events' commit times by outbox id.
type bench struct {
	rig     *benchkit.WebhookRig
	rec     []*benchkit.Receiver
	recIDs  []string
	live    []*benchkit.Receiver
	liveIDs map[*benchkit.Receiver]string

	mu      sync.Mutex
	created map[int64]time.Time
}

func run(ctx context.Context, failed, recovering, live, rate int, baseline time.Duration, recRate int, verbose bool) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteRedisLogs(quiet)
	log := quiet
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rig, err := benchkit.OpenWebhookRig(ctx, "webhookrecovery_bench")
	if err != nil {
		return err
	}
	defer rig.Close()
	b := &bench{rig: rig, liveIDs: map[*benchkit.Receiver]string{}, created: map[int64]time.Time{}}
	defer b.closeReceivers()
	if err := b.addWebhooks(ctx, recovering, live); err != nil {
		return err
	}
	if failed, err = b.writeOutage(ctx, failed/recovering); err != nil {
		return err
	}
	cfg := webhook.DefaultConfig()
	cfg.HostRate, cfg.UnverifiedHostRate, cfg.EndpointRate = 0, 0, 0
	if recRate > 0 {
		cfg.RecoveryRate = recRate
	}
	if recConc > 0 {
		cfg.RecoveryConcurrency = recConc
	}
	stop, err := rig.StartWorker(ctx, cfg, log, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer stop()
	if err := benchkit.WaitVerified(ctx, rig.Store, append(append([]string{}, b.recIDs...), b.liveIDList()...)); err != nil {
		return err
	}
	fmt.Printf("load average %s\n", benchkit.LoadAvg())
	fmt.Printf("one worker, GOMAXPROCS=%d, concurrency %d, %d per endpoint, recovery rate %d/s, recovery concurrency %d, %d partitions; %d live webhooks at %d events/s\n\n",
		runtime.GOMAXPROCS(0), cfg.Concurrency, cfg.EndpointConcurrency, cfg.RecoveryRate, cfg.RecoveryConcurrency, cfg.Partitions, live, rate)

	stopLive, liveDone := b.feedLive(ctx, rate)
	defer stopLive()
	baseStart := time.Now()
	time.Sleep(baseline)
	baseEnd := time.Now()
	if cpuProfile != "" {
		stopProfile, err := startProfile(cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	recStart, err := b.recover(ctx, failed)
	if err != nil {
		return err
	}
	recEnd := time.Now()
	stopLive()
	if err := <-liveDone; err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // the last live deliveries arrive
	b.reportRecovery(failed, recStart)
	stages, err := b.stages(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("load average after: %s\n", benchkit.LoadAvg())
	b.reportLive("live without a recovery", baseStart.Add(2*time.Second), baseEnd, stages)
	b.reportLive("live during the recovery", recStart, recEnd, stages)
	liveDups := int64(0)
	for _, lr := range b.live {
		liveDups += lr.Dups.Load()
	}
	fmt.Printf("live duplicates: %d\n", liveDups)
	return nil
}

// addWebhooks starts the receivers and their webhooks. The recovering
// webhooks subscribe to another event type than the live ones, so live
// events are not delivered to them.
func (b *bench) addWebhooks(ctx context.Context, recovering, live int) error {
	for i := range recovering + live {
		r, err := benchkit.StartReceiver()
		if err != nil {
			return err
		}
		event := store.EventAgentRevoked
		if i >= recovering {
			event = store.EventAttestationCreated
		}
		id, _, err := b.rig.AddWebhook(ctx, r.URL, []string{event})
		if err != nil {
			r.Close()
			return err
		}
		if i < recovering {
			b.rec, b.recIDs = append(b.rec, r), append(b.recIDs, id)
		} else {
			b.live = append(b.live, r)
			b.liveIDs[r] = id
		}
	}
	return nil
}

func (b *bench) liveIDList() []string {
	var ids []string
	for _, r := range b.live {
		ids = append(ids, b.liveIDs[r])
	}
	return ids
}

func (b *bench) closeReceivers() {
	for _, r := range append(append([]*benchkit.Receiver{}, b.rec...), b.live...) {
		r.Close()
	}
}

// writeOutage writes the outage, already over: per events an hour ago to
// each recovering webhook, each delivery failed after 7 attempts,
// dispatched long since. It returns how many deliveries failed.
func (b *bench) writeOutage(ctx context.Context, per int) (int, error) {
	t0 := time.Now()
	st := b.rig.Store
	for _, id := range b.recIDs {
		if _, err := st.Pool().Exec(ctx, `WITH ev AS (
				INSERT INTO outbox (event_type, payload, created_at, dispatched_at, published_at)
				SELECT 'agent.revoked', jsonb_set($2::jsonb, '{slot}', to_jsonb(i)), now() - interval '1 hour' + i * interval '1 ms',
					now() - interval '1 hour', now() - interval '1 hour'
				FROM generate_series(1, $1) i RETURNING id, created_at)
			INSERT INTO webhook_deliveries (id, webhook_id, outbox_id, status, attempts, created_at, updated_at)
			SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), $3, ev.id, 'failed', 7, ev.created_at, ev.created_at FROM ev`,
			per, payload, id); err != nil {
			return 0, err
		}
	}
	failed := per * len(b.recIDs)
	if _, err := st.Pool().Exec(ctx, `ANALYZE`); err != nil {
		return 0, err
	}
	fmt.Printf("setup: %d failed deliveries written in %s\n", failed, time.Since(t0).Round(time.Millisecond))
	return failed, nil
}

// feedLive writes live events at rate per second until stop is called,
// noting their commit times; done says how the writer ended.
func (b *bench) feedLive(ctx context.Context, rate int) (stop func(), done <-chan error) {
	lctx, cancel := context.WithCancel(ctx)
	out := make(chan error, 1)
	st := b.rig.Store
	go func() {
		per := max(rate/50, 1) // a write every 20 ms
		every := time.Second * time.Duration(per) / time.Duration(rate)
		next := time.Now()
		for lctx.Err() == nil {
			rows, err := st.Pool().Query(ctx, `INSERT INTO outbox (event_type, payload)
				SELECT 'attestation.created', $2::jsonb FROM generate_series(1, $1) RETURNING id, created_at`, per, payload)
			if err != nil {
				out <- err
				return
			}
			b.mu.Lock()
			for rows.Next() {
				var id int64
				var at time.Time
				if err := rows.Scan(&id, &at); err == nil {
					b.created[id] = at
				}
			}
			b.mu.Unlock()
			rows.Close()
			_, _ = st.Pool().Exec(ctx, `SELECT pg_notify($1, '')`, store.OutboxChannel)
			next = next.Add(every)
			time.Sleep(time.Until(next))
		}
		out <- nil
	}()
	return cancel, out
}

// startProfile writes a CPU profile to file until stop.
func startProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// recover starts the recoveries, as POST /webhooks/:id/recover does, and
// waits (10 minutes at most) until every failed delivery arrived again,
// with a progress line every 5 s. It returns when it started them.
func (b *bench) recover(ctx context.Context, failed int) (time.Time, error) {
	recStart := time.Now()
	for _, id := range b.recIDs {
		r, _, err := b.rig.Store.StartRecovery(ctx, b.rig.Account.ID, store.Recovery{ID: "rcv_" + randHex(12), WebhookID: id,
			Since: time.Now().Add(-2 * time.Hour), Until: time.Now(), OnlyFailed: true})
		if err != nil {
			return recStart, err
		}
		fmt.Printf("recovery %s: %d deliveries to queue again (answered in %s)\n", r.ID, r.Total, time.Since(recStart).Round(time.Millisecond))
	}
	recovered := func() int {
		n := 0
		for _, r := range b.rec {
			n += r.Count()
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
			return recStart, fmt.Errorf("%d of %d recovered deliveries after 10 minutes", recovered(), failed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return recStart, nil
}

// reportRecovery prints the recovery's rate, to the last recovered
// delivery's arrival.
func (b *bench) reportRecovery(failed int, recStart time.Time) {
	var lastRec time.Time
	var requests, dups int64
	for _, r := range b.rec {
		if at := r.Last(); at.After(lastRec) {
			lastRec = at
		}
		requests, dups = requests+r.Requests.Load(), dups+r.Dups.Load()
	}
	took := lastRec.Sub(recStart)
	fmt.Printf("recovery: %d deliveries to %d webhooks in %s: %.0f deliveries/s; %d requests (%d duplicates)\n\n", failed, len(b.rec),
		took.Round(time.Millisecond), float64(failed)/took.Seconds(), requests, dups)
}

// stamps are the stages of one live delivery, from the log: the relay's
// publication (outbox.published_at), the fan-out (dispatched_at) and the
// first attempt's start (webhook_attempts.at).
type stamps struct{ published, dispatched, attempt time.Time }

// deliveryKey is a live delivery: its outbox id and webhook.
type deliveryKey struct {
	id   int64
	hook string
}

// stages reads every live delivery's stamps.
func (b *bench) stages(ctx context.Context) (map[deliveryKey]stamps, error) {
	out := map[deliveryKey]stamps{}
	rows, err := b.rig.Store.Pool().Query(ctx, `SELECT o.id, d.webhook_id, o.published_at, o.dispatched_at, a.at
		FROM outbox o JOIN webhook_deliveries d ON d.outbox_id = o.id
		JOIN webhook_attempts a ON a.delivery_id = d.id AND a.attempt = 1
		WHERE o.event_type = 'attestation.created'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k deliveryKey
		var s stamps
		if err := rows.Scan(&k.id, &k.hook, &s.published, &s.dispatched, &s.attempt); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, rows.Err()
}

// reportLive prints the latency of the live events committed in
// [from, to), commit to arrival, and of each stage.
func (b *bench) reportLive(name string, from, to time.Time, stages map[deliveryKey]stamps) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var relay, fan, queued, send, lat []time.Duration
	missing := 0
	for id, c := range b.created {
		if c.Before(from) || !c.Before(to) {
			continue
		}
		for _, lr := range b.live {
			at, ok := lr.First(id)
			if !ok {
				missing++
				continue
			}
			lat = append(lat, at.Sub(c))
			if s, ok := stages[deliveryKey{id, b.liveIDs[lr]}]; ok {
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

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const payload = `{"pda":"7Np41oeYqPefeNQEHSv1UDhYrehxin3NStELsSKCT4K2","agentPda":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",` +
	`"agentId":"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v","actionType":"ToolCall","actionHash":"` +
	"abababababababababababababababababababababababababababababababab" + `","txSignature":"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW",` +
	`"slot":312456789,"timestamp":"2026-11-21T10:00:00Z","privacyMode":false,"agentSignature":"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW","commitment":"confirmed"}`
