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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/benchkit"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/webhook/keyring"
	"github.com/attestd/attestd/webhook/queue"
	"github.com/attestd/attestd/webhook/signature"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
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

// receiver records when each event first arrived.
type receiver struct {
	addr     string
	secret   string
	badSigs  atomic.Int64 // of the requests checked (one in 100)
	mu       sync.Mutex
	first    map[int64]time.Time
	requests atomic.Int64
	distinct atomic.Int64
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	if answer, ok := webhook.ChallengeAnswer(body); ok { // the endpoint verification
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
		return
	}
	n := r.requests.Add(1)
	now := time.Now()
	if n%100 == 0 && (signature.Verify(r.secret, req.Header, body, now, 0) != nil ||
		signature.VerifyService(r.secret, req.Header.Get(signature.HeaderService), body) != nil) {
		r.badSigs.Add(1)
	}
	// {"id":"evt_<n>",...
	if i := bytes.Index(body, []byte(`"evt_`)); i >= 0 {
		rest := body[i+5:]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			if id, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				r.mu.Lock()
				if _, ok := r.first[id]; !ok {
					r.first[id] = now
					r.distinct.Add(1)
				}
				r.mu.Unlock()
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), first: map[int64]time.Time{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return r, nil
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
	bs, err := benchkit.OpenStores(ctx, "webhook_bench", store.Options{MaxConns: 16})
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
	var recv []*receiver
	var ids []string
	for i := range hooks {
		addr := ""
		secret, _ := signature.NewSecret()
		if i < hooks-1 {
			r, err := startReceiver()
			if err != nil {
				return err
			}
			r.secret = secret
			recv = append(recv, r)
			addr = r.addr
		} else if addr, err = deadAddr(); err != nil {
			return err
		}
		id := "wh_" + hex.EncodeToString(randBytes(12))
		sealed, keyID, err := keys.Seal([]byte(secret), []byte(id))
		if err != nil {
			return err
		}
		if _, err := st.InsertWebhook(ctx, store.Webhook{ID: id, AccountID: acc.ID, URL: "http://" + addr + "/hook",
			Events: []string{store.EventAttestationCreated}, SecretSealed: sealed, SecretKeyID: keyID}, 0); err != nil {
			return err
		}
		if i == hooks-1 {
			// The dead receiver died after its endpoint was verified (it
			// never answers the challenge here).
			if _, err := st.Pool().Exec(ctx, `UPDATE webhooks SET verification = 'verified', verify_next_at = NULL
				WHERE id = $1`, id); err != nil {
				return err
			}
		} else {
			ids = append(ids, id)
		}
	}
	cfg := webhook.DefaultConfig()
	// Every receiver here is on 127.0.0.1: the per-host caps would measure
	// themselves, not the pipeline.
	cfg.Keys, cfg.AllowLoopback, cfg.MetricsAddr, cfg.HostRate, cfg.UnverifiedHostRate = keys, true, "", 0, 0
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
		bad += r.badSigs.Load()
	}
	fmt.Printf("signatures checked on one request in 100: %d bad\n", bad)
	fmt.Printf("dead receiver: its deliveries are parked behind its open circuit (deferrals{circuit_open})\n")
	return nil
}

// phase writes events (at rate per second; 0: as fast as possible) and
// waits until every healthy receiver has each of them.
func phase(ctx context.Context, st *store.Store, g *gen, recv []*receiver, name string, events, rate int) error {
	start := time.Now()
	var first, last, before, reqBefore int64
	for _, r := range recv {
		before += r.distinct.Load()
		reqBefore += r.requests.Load()
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
			done += r.distinct.Load()
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
		r.mu.Lock()
		for id, c := range created {
			at := r.first[id]
			lat = append(lat, at.Sub(c))
			if firstAt.IsZero() || c.Before(firstAt) {
				firstAt = c
			}
			if at.After(lastAt) {
				lastAt = at
			}
		}
		r.mu.Unlock()
		requests += r.requests.Load()
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
		r.mu.Lock()
		for id, c := range created {
			if r.first[id].Sub(c) > q(0.99) {
				slowest[fmt.Sprintf("receiver %d", i)]++
			}
		}
		r.mu.Unlock()
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
