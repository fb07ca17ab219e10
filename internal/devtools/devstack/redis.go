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

// Redis is a running throwaway Redis server without persistence.
type Redis struct {
	URL  string
	Addr string
	Dir  string
	proc *process
}

// StartRedis starts redis-server on a free loopback port, or on port when
// port is not zero (to restart a server where clients expect it).
func StartRedis(ctx context.Context, dir string, port int) (*Redis, error) {
	return StartRedisWith(ctx, dir, port)
}

// The memory policies of attestd's two Redis (docs/operations.md): the
// state's (limits, sessions, webhook queues, payment claims) is never
// evicted, full it refuses writes; the read cache's evicts its least
// recently used entries with a TTL (every cache entry has one).
var (
	StateRedisArgs = []string{"--maxmemory", "256mb", "--maxmemory-policy", "noeviction"}
	CacheRedisArgs = []string{"--maxmemory", "128mb", "--maxmemory-policy", "volatile-lru"}
)

// CacheRedisBudgetMB is ATTESTD_CACHE_MAX_MB for a cache server started
// with CacheRedisArgs: under its maxmemory, so it evicts only past what
// the budget expects.
const CacheRedisBudgetMB = "112"

// StartRedisWith is StartRedis with extra redis-server arguments (for
// example StateRedisArgs).
func StartRedisWith(ctx context.Context, dir string, port int, extra ...string) (*Redis, error) {
	if port != 0 {
		return startRedis(ctx, dir, port, extra...)
	}
	// A port found free may be taken before the server binds it: then it
	// exits, and it is started again on another, up to three times.
	var last error
	for range 3 {
		r, err := startRedis(ctx, dir, 0, extra...)
		if err == nil {
			return r, nil
		}
		last = err
	}
	return nil, last
}

// startRedis is StartRedis with extra redis-server arguments.
func startRedis(ctx context.Context, dir string, port int, extra ...string) (*Redis, error) {
	bins, err := Find()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create redis dir: %w", err)
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bins.Redis, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no",
		"--maxclients", "4096", "--loglevel", "warning")
	cmd.Args = append(cmd.Args, extra...)
	p, err := startProcess("redis-server", cmd, nil, filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := &Redis{URL: "redis://" + addr + "/0", Addr: addr, Dir: dir, proc: p}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := waitTCP(wctx, p, addr); err != nil {
		r.Kill()
		return nil, err
	}
	return r, nil
}

// Port returns the server's TCP port.
func (r *Redis) Port() int {
	_, p, _ := splitHostPort(r.Addr)
	return p
}

// Stop shuts the server down, waiting up to 5 s.
func (r *Redis) Stop() { r.proc.stop(syscall.SIGTERM, 5*time.Second) }

// Kill ends the server at once, like a crash.
func (r *Redis) Kill() { r.proc.kill() }

func splitHostPort(addr string) (string, int, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, err := strconv.Atoi(addr[i+1:])
			return addr[:i], p, err
		}
	}
	return addr, 0, fmt.Errorf("no port in %q", addr)
}

// Done is closed when the server has exited (stopped, or died).
func (r *Redis) Done() <-chan struct{} { return r.proc.done }
