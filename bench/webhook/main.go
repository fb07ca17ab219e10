// Command webhook-bench measures webhook delivery on loopback: events
// written through the one write path (store.Apply, which writes the
// outbox rows), fanned out to several webhooks on local receivers, one of
// them dead throughout (its port refuses connections), delivered by a
// webhook worker with the default configuration.
//
//	go run ./bench/webhook [-events 10000] [-webhooks 10] [-rate 250]
//
// Two phases over the same webhooks: a burst (all events written as fast
// as the write path takes them; deliveries/s is how fast the backlog
// drains) and a paced run (events written at -rate per second; latency
// from an event's commit time, outbox.created_at, to its first arrival at
// each healthy receiver). It starts a throwaway Postgres and Redis
// (devstack) unless DATABASE_URL (an admin URL: a database is created on
// that server) and REDIS_URL are set.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	events := flag.Int("events", 10_000, "events per phase")
	hooks := flag.Int("webhooks", 10, "webhooks subscribed to every event; the last one's receiver is dead")
	rate := flag.Int("rate", 250, "events per second in the paced phase")
	verbose := flag.Bool("v", false, "show the worker's logs")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(context.Background(), *events, *hooks, *rate, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// deadAddr is a loopback port nothing listens on.
func deadAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// gen makes attestation records (the write path does not check their
// signatures; the indexer does, before it).
type gen struct {
	slot   uint64
	agents []string
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func (g *gen) batch(n int) *store.Batch {
	b := &store.Batch{}
	g.slot++
	var sig solana.Signature
	copy(sig[:], randBytes(64))
	now := time.Now().UTC()
	for i := range n {
		r := store.AttestationRecord{
			Event:      store.Event{TxSignature: sig.String(), EventIndex: i, Slot: g.slot, Commitment: attestation.Confirmed},
			PDA:        solana.PublicKeyFromBytes(randBytes(32)).String(),
			AgentPDA:   g.agents[i%len(g.agents)],
			ActionType: attestation.ActionType(i % int(attestation.NumActionTypes)),
			Timestamp:  now,
		}
		copy(r.AgentID[:], randBytes(32))
		copy(r.ActionHash[:], randBytes(32))
		copy(r.Signature[:], randBytes(64))
		b.Attestations = append(b.Attestations, r)
	}
	return b
}

func run(ctx context.Context, events, hooks, rate int, verbose bool) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteRedisLogs(quiet)
	log := quiet
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	rig, err := benchkit.OpenWebhookRig(ctx, "webhook_bench")
	if err != nil {
		return err
	}
	defer rig.Close()
	st := rig.Store
	recv, ids, err := addWebhooks(ctx, rig, hooks)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range recv {
			r.Close()
		}
	}()
	cfg := webhook.DefaultConfig()
	// Every receiver here is on 127.0.0.1: the per-host caps would measure
	// themselves, not the pipeline.
	cfg.HostRate, cfg.UnverifiedHostRate = 0, 0
	reg := prometheus.NewRegistry()
	stop, err := rig.StartWorker(ctx, cfg, log, reg)
	if err != nil {
		return err
	}
	defer stop()
	if err := benchkit.WaitVerified(ctx, st, ids); err != nil {
		return err
	}

	fmt.Printf("webhook bench: %d events per phase to %d webhooks (%d healthy receivers, 1 dead), one worker, GOMAXPROCS=%d\n",
		events, hooks, hooks-1, runtime.GOMAXPROCS(0))
	fmt.Printf("worker: concurrency %d, %d per endpoint, endpoint rate %d/s, %d partitions, timeout %s\n\n",
		cfg.Concurrency, cfg.EndpointConcurrency, cfg.EndpointRate, cfg.Partitions, cfg.Timeout)
	g := &gen{}
	for range 20 {
		g.agents = append(g.agents, solana.PublicKeyFromBytes(randBytes(32)).String())
	}
	if err := phase(ctx, st, g, recv, "burst", events, 0); err != nil {
		return err
	}
	counters(reg)
	if err := phase(ctx, st, g, recv, "paced", events, rate); err != nil {
		return err
	}
	counters(reg)
	bad := int64(0)
	for _, r := range recv {
		bad += r.BadSigs.Load()
	}
	fmt.Printf("signatures checked on one request in 100: %d bad\n", bad)
	fmt.Printf("dead receiver: its deliveries are parked behind its open circuit (deferrals{circuit_open})\n")
	return nil
}

// addWebhooks starts hooks webhooks of the rig's account: hooks-1 to
// healthy receivers, the last to a dead one (its endpoint verified before
// it died). It returns the healthy receivers and their webhooks' ids.
func addWebhooks(ctx context.Context, rig *benchkit.WebhookRig, hooks int) ([]*benchkit.Receiver, []string, error) {
	var recv []*benchkit.Receiver
	var ids []string
	for range hooks - 1 {
		r, err := benchkit.StartReceiver()
		if err != nil {
			return recv, nil, err
		}
		recv = append(recv, r)
		id, secret, err := rig.AddWebhook(ctx, r.URL, []string{store.EventAttestationCreated})
		if err != nil {
			return recv, nil, err
		}
		r.Secret = secret
		ids = append(ids, id)
	}
	addr, err := deadAddr()
	if err != nil {
		return recv, nil, err
	}
	id, _, err := rig.AddWebhook(ctx, "http://"+addr+"/hook", []string{store.EventAttestationCreated})
	if err != nil {
		return recv, nil, err
	}
	// The dead receiver died after its endpoint was verified (it never
	// answers the challenge here).
	if _, err := rig.Store.Pool().Exec(ctx, `UPDATE webhooks SET verification = 'verified', verify_next_at = NULL
		WHERE id = $1`, id); err != nil {
		return recv, nil, err
	}
	return recv, ids, nil
}

// phase writes events (at rate per second; 0: as fast as possible) and
// waits until every healthy receiver has each of them.
func phase(ctx context.Context, st *store.Store, g *gen, recv []*benchkit.Receiver, name string, events, rate int) error {
	start := time.Now()
	var first, last, before, reqBefore int64
	for _, r := range recv {
		before += int64(r.Count())
		reqBefore += r.Requests.Load()
	}
	written := 0
	batch, every := 1000, time.Duration(0)
	if rate > 0 {
		batch = max(1, rate/50) // a write every 20 ms
		every = time.Second * time.Duration(batch) / time.Duration(rate)
	}
	next := time.Now()
	for written < events {
		n := min(batch, events-written)
		if _, err := st.Apply(ctx, g.batch(n)); err != nil {
			return err
		}
		written += n
		if every > 0 {
			next = next.Add(every)
			time.Sleep(time.Until(next))
		}
	}
	writeTime := time.Since(start)
	created := map[int64]time.Time{}
	rows, err := st.Pool().Query(ctx, `SELECT id, created_at FROM outbox WHERE event_type = 'attestation.created'
		AND created_at >= $1 ORDER BY id`, start.Add(-time.Second))
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return err
		}
		created[id] = at
		if first == 0 {
			first = id
		}
		last = id
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(created) != events {
		return fmt.Errorf("%s: %d outbox rows for %d events", name, len(created), events)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		done := int64(0)
		for _, r := range recv {
			done += int64(r.Count())
		}
		if done == int64(events*len(recv))+before {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d deliveries after 10 minutes", name, done, events*len(recv))
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lat []time.Duration
	var firstAt, lastAt time.Time
	requests := -reqBefore
	for _, r := range recv {
		for id, c := range created {
			at, _ := r.First(id)
			lat = append(lat, at.Sub(c))
			if firstAt.IsZero() || c.Before(firstAt) {
				firstAt = c
			}
			if at.After(lastAt) {
				lastAt = at
			}
		}
		requests += r.Requests.Load()
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
	span := lastAt.Sub(firstAt)
	fmt.Printf("%s: %d events (ids %d..%d) written in %s; %d deliveries to %d healthy receivers in %s\n",
		name, events, first, last, writeTime.Round(time.Millisecond), len(lat), len(recv), span.Round(time.Millisecond))
	fmt.Printf("  deliveries/s %.0f   latency p50 %s  p99 %s  max %s   requests %d (%d duplicates)\n",
		float64(len(lat))/span.Seconds(), q(0.5), q(0.99), q(1), requests, requests-int64(len(lat)))
	slowest := map[string]int{}
	for i, r := range recv {
		for id, c := range created {
			if at, _ := r.First(id); at.Sub(c) > q(0.99) {
				slowest[fmt.Sprintf("receiver %d", i)]++
			}
		}
	}
	fmt.Printf("  beyond p99, by receiver: %v\n", slowest)
	return nil
}

// counters prints the worker's outcome counters so far.
func counters(reg *prometheus.Registry) {
	mfs, err := reg.Gather()
	if err != nil {
		return
	}
	out := ""
	for _, mf := range mfs {
		name := strings.TrimPrefix(mf.GetName(), "attestd_webhook_")
		if name != "deliveries_total" && name != "deferrals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				out += fmt.Sprintf(" %s{%s}=%.0f", strings.TrimSuffix(name, "_total"), l.GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	fmt.Printf("  worker counters so far:%s\n\n", out)
}
