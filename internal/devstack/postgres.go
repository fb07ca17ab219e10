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

// Postgres is a running throwaway PostgreSQL server.
type Postgres struct {
	// URL connects as the superuser "postgres" to the database "postgres".
	URL  string
	Port int
	// Dir holds the server's data: the directory asked for, or, when
	// Relocated, one under /var/tmp (or the system temp directory) made for
	// the server's account, which could not enter the one asked for.
	Dir       string
	Relocated bool
	proc      *process
}

// StartPostgres initialises dir (unless it already holds a cluster) and
// starts a server on a free loopback port with durability turned off. As
// root the server runs as an unprivileged account; when that account cannot
// reach dir, the data lives in a directory of its own that stays the same
// for dir (see Postgres.Dir).
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	bins, err := Find()
	if err != nil {
		return nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	dir, relocated, err := postgresDataDir(dir, cred)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create postgres dir: %w", err)
	}
	if cred != nil {
		if err := chownTree(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		cmd := exec.CommandContext(ctx, bins.InitDB, "-D", dir, "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale=C", "--no-sync")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb %s: %w: %s", dir, err, tail(out))
		}
	}
	_ = os.Remove(filepath.Join(dir, "postmaster.pid")) // stale after a crash; we own this dir
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bins.Postgres, "-D", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning")
	p, err := startProcess("postgres", cmd, cred, filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	pg := &Postgres{URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), Port: port, Dir: dir,
		Relocated: relocated, proc: p}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := waitPostgres(wctx, pg); err != nil {
		pg.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, filepath.Join(dir, "server.log"))
	}
	return pg, nil
}

// DatabaseURL returns the URL of another database on the same server.
func (pg *Postgres) DatabaseURL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name)
}

// Stop shuts the server down (fast shutdown), waiting up to 10 s.
func (pg *Postgres) Stop() { pg.proc.stop(syscall.SIGINT, 10*time.Second) }

// Kill ends the server at once, like a crash.
func (pg *Postgres) Kill() { pg.proc.kill() }

// Remove stops the server and deletes its data, for throwaway servers
// (their data may live outside the directory the caller removes).
func (pg *Postgres) Remove() {
	pg.Stop()
	_ = os.RemoveAll(pg.Dir)
}

func waitPostgres(ctx context.Context, pg *Postgres) error {
	if err := waitTCP(ctx, pg.proc, fmt.Sprintf("127.0.0.1:%d", pg.Port)); err != nil {
		return err
	}
	// The port opens before recovery finishes; wait for a real query.
	for {
		if err := ping(ctx, pg.URL); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("postgres not ready: %w", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
		return nil
	})
}
