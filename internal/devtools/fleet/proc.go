package fleet

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

// Proc is one attestd process of the fleet. It keeps its command line,
// environment and addresses, so a restart brings it back where it was.
type Proc struct {
	Name        string // serve-1, index-2, worker-1 ...
	Role        string // serve, index or worker
	Addr        string // API listener (serve only), 127.0.0.1:port
	MetricsAddr string // its /metrics listener
	LogPath     string

	bin  string
	env  []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// out: taken out of service by Stop (until started again), so no
	// longer a scrape target; a killed process stays one.
	out bool
	// changed is called after the process starts, stops or is replaced
	// (the fleet rewrites Prometheus's targets); nil: nothing.
	changed func()
}

// notify calls the changed hook, when there is one.
func (p *Proc) notify() {
	if p.changed != nil {
		p.changed()
	}
}

// target is the process's metrics address and whether Prometheus is to
// scrape it (not after Stop).
func (p *Proc) target() (addr string, in bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.MetricsAddr, !p.out
}

func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", p.Name, err)
	}
	defer f.Close()
	cmd := exec.Command(p.bin, p.Role)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done, p.out = cmd, done, false
	return nil
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Pid is the process id of the current run (0 when none).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// signal sends sig and waits up to grace for the exit (then SIGKILL).
func (p *Proc) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Kill ends the process with SIGKILL: no drain, no goodbye. As after a
// crash, it stays a scrape target (whose up is 0).
func (p *Proc) Kill() {
	p.signal(syscall.SIGKILL, time.Minute)
	p.notify()
}

// Stop takes the process out of service: no longer a scrape target, it
// gets SIGTERM (a graceful drain) and Stop waits for the exit, killing it
// after 30 s.
func (p *Proc) Stop() {
	p.mu.Lock()
	p.out = true
	p.mu.Unlock()
	p.notify()
	p.signal(syscall.SIGTERM, 30*time.Second)
}

// Restart starts the process again (after Kill or Stop) with the same
// addresses and waits until it is ready (Ready).
func (p *Proc) Restart(ctx context.Context) error {
	if p.Running() {
		return fmt.Errorf("%s is still running", p.Name)
	}
	if err := p.start(); err != nil {
		return err
	}
	p.notify()
	return p.Ready(ctx)
}

// Replace starts a new process for p on the same API address while the
// current one stops: SIGTERM to the current one (which drains, still
// listening: both bind with ATTESTD_REUSE_PORT=on), a new one with a
// fresh metrics address (Prometheus's targets move to it once it has
// started), and a wait until the new one is ready. The returned Proc is
// the old process, to wait for (Wait).
func (p *Proc) Replace(ctx context.Context) (old *Proc, err error) {
	port, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	old = &Proc{Name: p.Name + " (old)", Role: p.Role, Addr: p.Addr, MetricsAddr: p.MetricsAddr, LogPath: p.LogPath, cmd: p.cmd, done: p.done}
	p.mu.Unlock()
	if old.cmd == nil || !old.Running() {
		return nil, fmt.Errorf("%s is not running", p.Name)
	}
	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("SIGTERM %s: %w", p.Name, err)
	}
	p.mu.Lock()
	p.MetricsAddr = "127.0.0.1:" + strconv.Itoa(port)
	p.mu.Unlock()
	for i, kv := range p.env {
		for _, k := range []string{"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR="} {
			if strings.HasPrefix(kv, k) && kv != k { // an empty one stays off
				p.env[i] = k + p.MetricsAddr
			}
		}
	}
	err = p.start()
	p.notify() // the new address is the target, even when it did not start
	if err != nil {
		return old, err
	}
	return old, p.Ready(ctx)
}

// Wait waits up to d for the process to exit (then kills it) and reports
// whether it exited on its own.
func (p *Proc) Wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// Ready waits until the process answers its /health with 200: an API
// node's /api/v1/health, an index or worker process's /health on its
// internal listener.
func (p *Proc) Ready(ctx context.Context) error {
	url := "http://" + p.MetricsAddr + "/health"
	if p.Role == "serve" {
		url = "http://" + p.Addr + "/api/v1/health"
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if !p.Running() {
			return fmt.Errorf("%s exited (log: %s)", p.Name, p.LogPath)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready on %s: %w (log: %s)", p.Name, url, ctx.Err(), p.LogPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
