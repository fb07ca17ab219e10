package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/config"
	"github.com/attestd/attestd/indexer"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	register("index", "index the Prova program from Solana into Postgres (one writer among any number of index processes)", runIndex)
	localHooks = append(localHooks, localIndex)
	registerFeature(feature{name: "indexer-status", configure: configureIndexerStatus})
}

// configureIndexerStatus feeds /health: the indexer's progress from the
// checkpoints it writes in Postgres, and whether the chain RPC answers.
func configureIndexerStatus(_ context.Context, n *node) error {
	icfg, err := indexer.ConfigFromEnv(nil)
	if err != nil {
		return err
	}
	sr := indexer.NewStatusReader(n.store, icfg.RPCURL)
	probe := indexer.NewChainProbe(icfg.RPCURL)
	n.deps.Indexer = func(ctx context.Context) (app.IndexerStatus, error) {
		s, err := sr.Read(ctx)
		return app.IndexerStatus(s), err
	}
	n.deps.Chain = func(ctx context.Context) app.ChainStatus {
		return app.ChainStatus{RPC: probe.RPC(), Reachable: probe.Reachable(ctx)}
	}
	return nil
}

func runIndex(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := loadConfig()
	if err != nil {
		return err
	}
	reg := newRegistry()
	metricsAddr := "127.0.0.1:9091"
	if v, set := os.LookupEnv("ATTESTD_INDEXER_METRICS_ADDR"); set {
		metricsAddr = v
	}
	serveMetrics(ctx, metricsAddr, reg, log)
	return startIndexer(ctx, cfg, log, reg)
}

// startIndexer opens the store (and, when Redis is configured, the cache
// whose epoch the write path bumps so API nodes see new rows) and runs the
// indexer until ctx ends.
func startIndexer(ctx context.Context, cfg config.Config, log *slog.Logger, reg prometheus.Registerer) error {
	icfg, err := indexer.ConfigFromEnv(nil)
	if err != nil {
		return err
	}
	icfg.Logger, icfg.Registerer = log, reg
	st, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if cfg.RedisURL != "" {
		rdb, err := openRedis(ctx, cfg)
		if err != nil {
			return err
		}
		defer rdb.Close()
		c, err := openCache(ctx, cfg, rdb, st, reg, log, false)
		if err != nil {
			return err
		}
		defer c.Close()
	} else {
		log.Warn("REDIS_URL not set: API caches will not learn of newly indexed rows until they expire")
	}
	ix, err := indexer.New(icfg, st)
	if err != nil {
		return err
	}
	log.Info("indexer starting", "rpc", icfg.RPCURL, "ws", icfg.WSURL, "program", icfg.ProgramID.String())
	return ix.Run(ctx)
}

// localIndex runs the indexer inside `attestd local` (make run), against
// the chain localDevnet started or ATTESTD_SOLANA_RPC_URL names.
func localIndex(ctx context.Context, log *slog.Logger, _ string) error {
	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	go func() {
		if err := startIndexer(ctx, cfg, log, prometheus.NewRegistry()); err != nil && ctx.Err() == nil {
			log.Error("local indexer stopped", "err", err)
		}
	}()
	return nil
}
