package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/buildinfo"
)

func init() {
	register("serve", "serve the public API (and /metrics on the internal listener)", runServe)
	register("migrate", "apply database migrations (idempotent)", runMigrate)
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := loadConfig()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, true) // serve cached reads even if Postgres is down at start
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		log.Warn("postgres does not answer yet; serving cached reads only until it does", "err", err)
	}
	rdb, err := openRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	reg := newRegistry()
	c, err := openCache(ctx, cfg, rdb, st, reg, log, true)
	if err != nil {
		return err
	}
	defer c.Close()
	deps := app.Deps{Store: st, Cache: c, Logger: log, Registerer: reg, AccessLogAll: cfg.AccessLogAll}
	n := &node{cfg: cfg, log: log, store: st, redis: rdb, reg: reg, deps: &deps}
	defer func() {
		for i := len(n.closers) - 1; i >= 0; i-- {
			n.closers[i]()
		}
	}()
	for _, f := range features {
		if f.configure == nil {
			continue
		}
		if err := f.configure(ctx, n); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	api := app.New(deps)
	for _, f := range features {
		if f.routes == nil {
			continue
		}
		if err := f.routes(ctx, n, api); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	serveMetrics(ctx, cfg.MetricsAddr, reg, log)
	log.Info("serving", "addr", cfg.HTTPAddr, "version", buildinfo.Version)
	return api.Listen(ctx, cfg.HTTPAddr, cfg.ShutdownTimeout)
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := loadConfig()
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		log.Info("schema is current")
	} else {
		log.Info("migrations applied", "versions", fmt.Sprint(applied))
	}
	return nil
}
