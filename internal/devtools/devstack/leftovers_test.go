package devstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKillLeftoversEndsOnlyOurServersInTheDirectory: a table of processes
// around a run directory; only our servers working in it, or naming a
// path in it, are ended. A shell in the directory, our server in a
// sibling whose name extends the directory's, and a server elsewhere
// stay.
func TestKillLeftoversEndsOnlyOurServersInTheDirectory(t *testing.T) {
	bins, err := Find()
	if err != nil {
		t.Fatalf("find servers: %v", err)
	}
	base := t.TempDir()
	run, sibling := filepath.Join(base, "run"), filepath.Join(base, "run2")
	for _, d := range []string{run + "/redis", run + "/witness", sibling + "/redis"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A "redis-server" by name that is a shell waiting: the name it was
	// started by is what is judged, as for Debian's redis-server (a link
	// to redis-check-rdb).
	fakeServer := filepath.Join(base, "redis-server")
	if err := os.Symlink("/bin/sh", fakeServer); err != nil {
		t.Fatal(err)
	}
	named := func(arg string) *exec.Cmd { return exec.Command(fakeServer, "-c", "sleep 300; :", "sh", arg) }
	redisIn := func(dir string) *exec.Cmd {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return exec.Command(bins.Redis, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir)
	}
	cases := []struct {
		name   string
		cmd    *exec.Cmd
		killed bool
	}{
		{"our redis working in the run directory", redisIn(run + "/redis"), true},
		{"a server named redis-server whose argument is in the run directory", named(run + "/witness/agent.sock"), true},
		{"a sleep (not ours) working in the run directory", withDir(exec.Command("sleep", "300"), run), false},
		{"our redis in a sibling whose name extends the run directory's", redisIn(sibling + "/redis"), false},
		{"a server named redis-server naming the sibling", named(sibling + "/x"), false},
		{"a server named redis-server naming the run directory's parent", named(base), false},
	}
	for _, c := range cases {
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		go c.cmd.Wait()
		t.Cleanup(func() { _ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) }) // its group: a shell's sleep too
	}
	time.Sleep(200 * time.Millisecond) // redis has changed directory
	killed := KillLeftovers([]string{run})
	for _, c := range cases {
		pid := c.cmd.Process.Pid
		if gone := !alive(pid); gone != c.killed {
			t.Errorf("%s (pid %d): ended %v, want %v (killed %v)", c.name, pid, gone, c.killed, killed)
		}
	}
	if len(killed) != 2 {
		t.Errorf("killed %v, want the 2 leftovers", killed)
	}
}

func withDir(c *exec.Cmd, dir string) *exec.Cmd {
	c.Dir = dir
	return c
}
