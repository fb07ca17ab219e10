package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/attestd/attestd/devstack"
)

func init() {
	register("local", "run everything locally (make run): throwaway Postgres and Redis under .run/, demo data, the API", runLocal)
}

// localHooks are extra parts `local` starts after the API's stores are up
// (the chain simulator and the indexer add themselves here).
var localHooks []func(ctx context.Context, log *slog.Logger, dir string) error

func runLocal(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	dir := fs.String("dir", ".run", "where the local servers keep their files")
	agents := fs.Int("agents", 50, "agents to seed the first time")
	atts := fs.Int("attestations", 100_000, "attestations to seed the first time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := newLogger(slog.LevelInfo)
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", abs, err)
	}
	if os.Getenv("DATABASE_URL") == "" {
		log.Info("starting local postgres", "dir", filepath.Join(abs, "pg"))
		pg, err := devstack.StartPostgres(ctx, filepath.Join(abs, "pg"))
		if err != nil {
			return fmt.Errorf("local postgres: %w", err)
		}
		defer pg.Stop()
		os.Setenv("DATABASE_URL", pg.URL)
	}
	if os.Getenv("REDIS_URL") == "" {
		log.Info("starting local redis (no persistence)")
		r, err := devstack.StartRedis(ctx, filepath.Join(abs, "redis"), 0)
		if err != nil {
			return fmt.Errorf("local redis: %w", err)
		}
		defer r.Stop()
		os.Setenv("REDIS_URL", r.URL)
	}
	log.Info("local stores ready", "DATABASE_URL", os.Getenv("DATABASE_URL"), "REDIS_URL", os.Getenv("REDIS_URL"))
	if err := runSeed(ctx, []string{"--if-empty", "--agents", strconv.Itoa(*agents), "--attestations", strconv.Itoa(*atts)}); err != nil {
		return err
	}
	for _, h := range localHooks {
		if err := h(ctx, log, abs); err != nil {
			return err
		}
	}
	return runServe(ctx, nil)
}
