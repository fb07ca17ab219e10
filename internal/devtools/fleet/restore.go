package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

// Run runs `attestd args...` to completion with the environment every
// process of the fleet shares (its DATABASE_URL, Redis, chain and log
// settings), as an operator runs a command on one of its hosts: attestd
// backup, attestd keys create... It returns the command's standard
// output; a failure carries its standard error.
func (f *Fleet) Run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.opt.Bin, args...)
	cmd.Env = f.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("attestd %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}

// RestorePrimary loses the database and restores it from dump (a file
// attestd backup wrote), as an operator does after losing the primary:
// the primary is killed (SIGKILL to the postmaster and every backend, a
// crash) and its data left behind; a new, empty server starts in a
// directory of its own on the dead one's port, so every process keeps
// its DATABASE_URL; and `attestd restore dump` loads the dump into it,
// migrates it and holds the transparency log. The attestd processes are
// left as they are: the caller stops them before and starts them after,
// as the restore procedure says (docs/operations.md, Restore). It needs a
// fleet without a read replica (NoReplica): the replica would go on
// following the dead primary.
func (f *Fleet) RestorePrimary(ctx context.Context, dump string) error {
	if f.Replica != nil {
		return errors.New("fleet: RestorePrimary needs a fleet without a read replica (NoReplica)")
	}
	if _, err := os.Stat(dump); err != nil {
		return fmt.Errorf("fleet: restore: %w", err)
	}
	dead := f.Primary
	dead.Kill() // its closer (Remove) still deletes its data at Close
	dir := ""
	for i := 1; ; i++ {
		dir = filepath.Join(f.opt.Dir, "pg-restored-"+strconv.Itoa(i))
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	pg, err := devstack.StartPostgresAt(ctx, dir, dead.Port)
	if err != nil {
		return fmt.Errorf("fleet: a new postgres on the dead one's port %d: %w", dead.Port, err)
	}
	f.Primary = pg
	f.closers = append(f.closers, pg.Remove)
	f.opt.Log.Info("postgres primary replaced by an empty server", "url", pg.URL, "dir", pg.Dir)
	if _, err := f.Run(ctx, "restore", dump); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	f.opt.Log.Info("database restored", "dump", dump)
	return nil
}
