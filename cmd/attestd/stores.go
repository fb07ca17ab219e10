package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

const storesUsage = "usage: attestd stores -- COMMAND [ARGS...]\n\nCOMMAND runs with " + devstack.EnvTestPostgres + " and " +
	devstack.EnvTestRedis + " naming the servers (what the test suite reads)."

// runStores starts one Postgres and one Redis server, exports their URLs as
// ATTESTD_TEST_POSTGRES_URL and ATTESTD_TEST_REDIS_URL, runs the command
// after "--", stops the servers and exits with the command's status.
func runStores(ctx context.Context, args []string) error {
	fs := newFlags("stores")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		return usageErrorf("stores: name the command to run after --: attestd stores -- command [args...]")
	}
	log := newLogger(slog.LevelInfo)
	dir, err := os.MkdirTemp("", "attestd-stores-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	pg, err := devstack.StartPostgres(ctx, filepath.Join(dir, "pg"))
	if err != nil {
		return fmt.Errorf("test postgres: %w", err)
	}
	defer pg.Remove() // its data may live outside dir (see devstack.Postgres.Dir)
	r, err := devstack.StartRedis(ctx, filepath.Join(dir, "redis"), 0)
	if err != nil {
		return fmt.Errorf("test redis: %w", err)
	}
	defer r.Stop()
	log.Info("test stores ready", "postgres", pg.URL, "postgresData", pg.Dir, "redis", r.URL)
	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), devstack.EnvTestPostgres+"="+pg.URL, devstack.EnvTestRedis+"="+r.URL)
	err = cmd.Run()
	// The PostgreSQL data that local stacks the command started (tests of
	// `attestd local` in temporary directories) kept outside those
	// directories, now deleted.
	if removed, rerr := devstack.RemoveOrphans(); rerr != nil {
		log.Warn("orphaned postgres data not all removed", "err", rerr)
	} else if len(removed) > 0 {
		log.Info("removed the postgres data of local stacks whose directories are gone", "dirs", len(removed))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s exited with status %d", cmdArgs[0], exit.ExitCode())
	}
	return err
}
