package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/store"
)

// newLogger makes the slog logger every subcommand uses, on stderr: text
// on a terminal, JSON otherwise or as ATTESTD_LOG_FORMAT says.
func newLogger(level slog.Level) *slog.Logger {
	log := slog.New(config.NewLogHandler(os.Stderr, config.LogFormat(nil), level, config.IsTerminal(os.Stderr)))
	slog.SetDefault(log)
	cache.RouteRedisLogs(log)
	return log
}

// loadSettings reads every setting role uses from getenv (nil: the
// process environment), naming every bad one at once before anything
// connects, and sets up logging.
func loadSettings(role settings.Role, getenv func(string) string) (settings.Settings, *slog.Logger, error) {
	s, err := settings.Load(role, getenv)
	if err != nil {
		return s, nil, err
	}
	return s, newLogger(s.Common.LogLevel), nil
}

// commandStore loads the configuration and opens the primary, as the
// one-shot commands (migrate, seed, keys, payments, accounts) need.
// Without DATABASE_URL and REDIS_URL, they use the stores of a make run
// running in this checkout (see discoverLocalStores).
//
// getenv is where the settings come from (nil: the process environment,
// with a running make run's stores when it names none).
func commandStore(ctx context.Context, getenv func(string) string) (config.Config, *slog.Logger, *store.Store, error) {
	if getenv == nil {
		getenv = discoverLocalStores(os.Stderr)
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return cfg, nil, nil, err
	}
	log := newLogger(cfg.LogLevel)
	if cfg.DatabaseURL == "" {
		return cfg, nil, nil, errors.New("DATABASE_URL not set, and no make run is running in this directory or its checkout " +
			"(it leaves its stores in .run/" + storesFileName + "): start `make run` in another terminal, or set DATABASE_URL")
	}
	st, err := node.OpenStore(ctx, cfg, false)
	if err != nil {
		return cfg, nil, nil, err
	}
	return cfg, log, st, nil
}
