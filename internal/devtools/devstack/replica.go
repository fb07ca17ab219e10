package devstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// StartReplica makes a streaming replica of primary in dir with
// pg_basebackup -R (a base backup that starts replaying the primary's WAL
// as a hot standby) and starts it on a free loopback port, as the same
// unprivileged account as the primary when we are root. dir must not hold
// a cluster yet.
func StartReplica(ctx context.Context, primary *Postgres, dir string) (*Postgres, error) {
	bins, err := Find()
	if err != nil {
		return nil, err
	}
	basebackup := firstExisting(pathOf("pg_basebackup"), filepath.Join(filepath.Dir(bins.Postgres), "pg_basebackup"))
	if basebackup == "" {
		return nil, fmt.Errorf("pg_basebackup not found beside %s", bins.Postgres)
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create replica dir: %w", err)
	}
	if cred != nil {
		if err := chownTree(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, basebackup, "-D", dir, "-R", "-X", "stream", "-c", "fast", "--no-sync",
		"-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", "postgres")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_basebackup of %s into %s: %w: %s", primary.URL, dir, err, tail(out))
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	// The primary's settings, as a hot standby; the log stays apart from
	// the primary's, which the base backup copied.
	_ = os.Remove(filepath.Join(dir, "server.log"))
	srv := exec.Command(bins.Postgres, "-D", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		// A hot standby refuses to start with fewer connections than its
		// primary allows: the same 600 as StartPostgres.
		"-c", "max_connections=600", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning",
		"-c", "hot_standby=on")
	p, err := startProcess("postgres replica", srv, cred, filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	r := &Postgres{URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), Port: port, Dir: dir, proc: p}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := waitPostgres(wctx, r); err != nil {
		r.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, filepath.Join(dir, "server.log"))
	}
	return r, nil
}
