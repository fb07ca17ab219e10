package devstack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	return StartPostgresAt(ctx, dir, 0)
}

// StartPostgresAt is StartPostgres on the given loopback port (0: a free
// one): a server that replaces one which died takes its address, so the
// clients need no new URL.
func StartPostgresAt(ctx context.Context, dir string, port int) (*Postgres, error) {
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
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bins.Postgres, "-D", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=600", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning")
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

// Kill ends the server at once, like a crash: the postmaster and every
// process it started. Backends make themselves process-group leaders
// (setsid), so killing the postmaster's group alone leaves them serving
// the connections already open until they notice their parent died: a
// "killed" server would still answer a query or two. The postmaster is
// stopped first (it forks nothing more), its children are killed, and
// Kill returns once they have exited (their sockets closed), at most 5 s.
func (pg *Postgres) Kill() {
	pid := pg.proc.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	children := childrenOf(pid)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	pg.proc.kill()
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range children {
		for alive(c) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(c); ok && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// alive reports whether pid still runs: it exists and is not a zombie (a
// zombie has closed its files).
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads a process's parent and state from /proc/pid/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// Remove stops the server and deletes its data, for throwaway servers
// (their data may live outside the directory the caller removes).
func (pg *Postgres) Remove() {
	pg.Stop()
	_ = os.RemoveAll(pg.Dir)
	if pg.Relocated {
		_ = os.Remove(pg.Dir + originSuffix)
	}
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

// Done is closed when the postmaster has exited (stopped, or died).
func (pg *Postgres) Done() <-chan struct{} { return pg.proc.done }
