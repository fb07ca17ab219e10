package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/seed"
)

func runSeed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	agents := fs.Int("agents", 50, "agents to register")
	atts := fs.Int("attestations", 100_000, "attestations to write")
	seedN := fs.Uint64("seed", 1, "random seed (same seed, same data)")
	ifEmpty := fs.Bool("if-empty", false, "do nothing when the database already holds attestations")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agents < 1 || *atts < 0 {
		return fmt.Errorf("--agents must be >= 1 and --attestations >= 0")
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
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	if *ifEmpty {
		s, err := st.Stats(ctx, time.Now())
		if err != nil {
			return err
		}
		if s.Attestations > 0 {
			log.Info("database already seeded", "attestations", s.Attestations)
			return nil
		}
	}
	if cfg.RedisURL != "" {
		rdb, err := openRedis(ctx, cfg)
		if err != nil {
			return err
		}
		defer rdb.Close()
		closeCache, err := openWriterCache(ctx, cfg, rdb, st, nil, log)
		if err != nil {
			return err
		}
		defer closeCache()
	}
	res, err := seed.Run(ctx, st, seed.Options{Agents: *agents, Attestations: *atts, Seed: *seedN, Logger: log})
	if err != nil {
		return err
	}
	log.Info("seeded", "agents", len(res.Agents), "attestations", res.Attestations, "duration", res.Duration.String())
	return nil
}
