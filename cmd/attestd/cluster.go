package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/attestd/attestd/internal/devtools/fleet"
	"github.com/attestd/attestd/internal/settings"
)

// runCluster runs the whole fleet on this machine (make cluster) and
// prints a status line every few seconds until it is stopped.
func runCluster(ctx context.Context, args []string) error {
	fs := newFlags("cluster")
	dir := fs.String("dir", ".run/cluster", "where the fleet keeps data and logs (wiped at start)")
	nginxConf := fs.String("nginx", "deploy/nginx.conf", "the nginx site to run in front of the API nodes")
	rules := fs.String("rules", "deploy/prometheus/attestd-rules.yml", "the Prometheus rules to load (\"\": no Prometheus)")
	serve := fs.Int("serve", 3, "API nodes")
	index := fs.Int("index", 2, "indexers (one leads)")
	worker := fs.Int("worker", 2, "webhook workers")
	redisCluster := fs.Bool("redis-cluster", false, "a three-master Redis Cluster instead of one Redis")
	noReplica := fs.Bool("no-replica", false, "PostgreSQL without a streaming read replica")
	rate := fs.Float64("rate", 20, "attestations per second the chain simulator keeps producing")
	every := fs.Duration("status", 5*time.Second, "how often to print the status line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The fleet's processes read the environment (under what the fleet
	// sets for them): every setting they read is checked before anything
	// starts.
	if _, err := settings.Load(settings.Local, os.Getenv); err != nil {
		return err
	}
	log := newLogger(slog.LevelInfo)
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("clear %s: %w", abs, err)
	}
	conf, err := filepath.Abs(*nginxConf)
	if err != nil {
		return err
	}
	f, err := fleet.Start(ctx, fleet.Options{Bin: bin, Dir: abs, NginxConf: conf, Serve: *serve, Index: *index, Worker: *worker,
		RedisCluster: *redisCluster, NoReplica: *noReplica, Rate: *rate, WitnessedLog: true, Dataset: true, RulesFile: *rules, Log: log})
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Printf("\nfleet up: %s (logs in %s)\n", f.URL(), abs)
	for _, p := range f.Procs() {
		fmt.Printf("  %-9s pid %-7d api %-21s metrics %s\n", p.Name, p.Pid(), p.Addr, p.MetricsAddr)
	}
	fmt.Printf("  postgres %s", f.Primary.URL)
	if f.Replica != nil {
		fmt.Printf(" (replica %s)", f.Replica.URL)
	}
	fmt.Printf("\n  chain    %s\n", f.Chain.RPCURL())
	if f.Prometheus != nil {
		fmt.Printf("  prometheus %s (alerts: %s/alerts)\n", f.Prometheus.URL, f.Prometheus.URL)
	}
	if f.Witness != nil {
		fmt.Printf("  witness  %s (%s)\n", f.Witness.URL, f.Witness.VerifierKey)
	}
	fmt.Printf("Ctrl-C stops everything.\n\n")
	t := time.NewTicker(*every)
	defer t.Stop()
	for {
		fmt.Printf("%s  %s\n", time.Now().UTC().Format("15:04:05"), f.Status(ctx))
		select {
		case <-ctx.Done():
			fmt.Println("stopping the fleet")
			return nil
		case <-t.C:
		}
	}
}
