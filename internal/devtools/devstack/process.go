package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a child server that dies with its parent.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

func startProcess(name string, cmd *exec.Cmd, cred *syscall.Credential, logPath string) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Credential: cred}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open %s log: %w", name, err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		defer f.Close()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to grace before killing the process.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	p.once.Do(func() {
		if p.exited() {
			return
		}
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// kill ends the process at once, like a crash.
func (p *process) kill() {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// waitTCP waits until addr accepts connections, the process dies, or ctx ends.
func waitTCP(ctx context.Context, p *process, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited before accepting connections: %v", p.name, p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready on %s: %w", p.name, addr, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// unprivileged returns the credential to run postgres with when we are root
// (postgres refuses to run as root), or nil when we are not root.
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err := errors.Join(err1, err2); err != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errNoUser
}

// Environment variables through which `attestd stores` (make test) hands
// the servers it started to the test binaries it runs.
const (
	EnvTestPostgres = "ATTESTD_TEST_POSTGRES_URL"
	EnvTestRedis    = "ATTESTD_TEST_REDIS_URL"
)
