package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/config"
	"github.com/prometheus/client_golang/prometheus"
)

func runIndex(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := loadConfig()
	if err != nil {
		return err
	}
	icfg, err := indexer.ConfigFromEnv(nil)
	if err != nil {
		return err
	}
	reg := newRegistry()
	serveMetrics(ctx, icfg.MetricsAddr, reg, log, cfg.Pprof)
	return startIndexer(ctx, cfg, icfg, log, reg)
}

// startIndexer opens the store (and, when Redis is configured, the cache
// whose epoch the write path bumps so API nodes see new rows) and runs the
// indexer until ctx ends.
func startIndexer(ctx context.Context, cfg config.Config, icfg indexer.Config, log *slog.Logger, reg prometheus.Registerer) error {
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
		closeCache, err := openWriterCache(ctx, cfg, rdb, st, reg, log)
		if err != nil {
			return err
		}
		defer closeCache()
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
