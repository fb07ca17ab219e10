package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLocalKilledLeavesNothingAndDiesWithItsParts: `attestd local` (make
// run) killed with SIGKILL leaves none of the servers it started running
// (PostgreSQL, both Redis servers, the witness and its ssh-agent): each
// dies with it. A server an earlier run left anyway (here, one planted
// before the start) is ended when the next run starts, which then comes
// up. And a server that dies alone while the run goes on stops the run,
// with a line naming it, instead of leaving the API up without it.
func TestLocalKilledLeavesNothingAndDiesWithItsParts(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	run := testenv.TempDir(t, "attestd-local-kill-")
	// A Redis left by an earlier run, in its directory, in a session of
	// its own: nothing kills it when its parent dies.
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	testenv.Must(t, os.MkdirAll(filepath.Join(run, "redis"), 0o755), "redis dir")
	bins, err := devstack.Find()
	testenv.Must(t, err, "find servers")
	planted := exec.Command(bins.Redis, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", filepath.Join(run, "redis"))
	planted.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	testenv.Must(t, planted.Start(), "plant a leftover redis")
	go planted.Wait()
	t.Cleanup(func() { _ = planted.Process.Kill() })

	start := func(t *testing.T) (*daemon, string) {
		port, err := devstack.FreePort()
		testenv.Must(t, err, "free port")
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), fmt.Sprintf("ATTESTD_HTTP_ADDR=127.0.0.1:%d", port),
			"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "GOFLAGS=" + os.Getenv("GOFLAGS")}
		// From the package's directory: a checkout, so the witness runs too.
		d := startDaemon(t, bin, env, "local", "--dir", run, "--agents", "2", "--attestations", "20")
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		d.waitFor(t, "attestd local serves", 200*time.Millisecond, func() (bool, string) {
			res, err := http.Get(base + "/api/v1/health")
			if err != nil {
				return false, err.Error()
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK, res.Status
		})
		return d, dataDir(t, d.output.String())
	}

	d, pgData := start(t)
	if alive(planted.Process.Pid) {
		t.Errorf("the leftover redis (pid %d) still runs after the next start", planted.Process.Pid)
	}
	if !strings.Contains(d.output.String(), "stopped servers an earlier make run left running") {
		t.Errorf("no line says the leftover was stopped:\n%s", d.output.String())
	}
	parts := processesIn(t, run, pgData)
	names := map[string]bool{}
	for _, p := range parts {
		names[p.name] = true
	}
	for _, want := range []string{"postgres", "redis-server", "ssh-agent", "litewitness"} {
		if !names[want] {
			t.Errorf("no %s among the run's processes: %v", want, parts)
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	// Every server dies with it, but the ssh-agent: Debian installs it
	// setgid, which clears the parent-death signal. The next start ends it.
	var agent int
	testenv.WaitForState(t, "every server of the killed run gone", 10*time.Second, func() (bool, string) {
		left := processesIn(t, run, pgData)
		if len(left) == 1 && left[0].name == "ssh-agent" {
			agent = left[0].pid
			left = nil
		}
		return len(left) == 0, fmt.Sprint(left)
	})

	// Again (the data kept), then a Redis dies alone: the run stops and
	// says which.
	d, pgData = start(t)
	if agent != 0 && alive(agent) {
		t.Errorf("the killed run's ssh-agent (pid %d) still runs after the next start", agent)
	}
	var state int
	for _, p := range processesIn(t, run, pgData) {
		if p.name == "redis-server" && p.cwd == filepath.Join(run, "redis") {
			state = p.pid
		}
	}
	if state == 0 {
		t.Fatal("the state's redis is not among the run's processes")
	}
	testenv.Must(t, syscall.Kill(state, syscall.SIGKILL), "kill the state's redis")
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("attestd local still runs a minute after its redis died:\n%s", d.output.String())
	}
	out := d.output.String()
	if d.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out, "exited on its own") || !strings.Contains(out, `redis (state)`) {
		t.Fatalf("exit %d; want a failure naming the redis:\n%s", d.cmd.ProcessState.ExitCode(), out)
	}
	testenv.WaitForState(t, "the other servers stopped with it", 10*time.Second, func() (bool, string) {
		left := processesIn(t, run, pgData)
		return len(left) == 0, fmt.Sprint(left)
	})
}

type runProcess struct {
	pid       int
	name, cwd string
}

func (p runProcess) String() string { return fmt.Sprintf("%s[%d] in %s", p.name, p.pid, p.cwd) }

// processesIn lists the live processes working in, or naming, one of
// dirs (their working directory or an argument under it).
func processesIn(t *testing.T, dirs ...string) []runProcess {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	testenv.Must(t, err, "read /proc")
	var out []runProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		proc := "/proc/" + e.Name()
		comm, _ := os.ReadFile(proc + "/comm")
		cwd, _ := os.Readlink(proc + "/cwd")
		cmdline, _ := os.ReadFile(proc + "/cmdline")
		for _, d := range dirs {
			if d == "" {
				continue
			}
			if strings.HasPrefix(cwd+"/", d+"/") || strings.Contains(string(cmdline), d+"/") || strings.Contains(string(cmdline), d+"\x00") {
				out = append(out, runProcess{pid: pid, name: strings.TrimSpace(string(comm)), cwd: cwd})
				break
			}
		}
	}
	return out
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
