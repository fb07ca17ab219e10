package devstack

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leftoverNames are the programs a local stack starts: only these are
// ever taken for leftovers (a shell whose working directory is under the
// run directory is somebody's, not ours).
var leftoverNames = []string{"postgres", "redis-server", "ssh-agent", "litewitness", "weed"}

// KillLeftovers ends the servers an earlier run left behind under dirs:
// processes of leftoverNames whose working directory is in one of dirs
// or whose command line names a path in one (a run killed with SIGKILL
// cannot stop them; PostgreSQL backends that outlive their postmaster
// hold its shared memory and keep the next server from starting). The
// caller must hold the run directory's lock, so nothing it finds belongs
// to a run still going. It returns the pids it killed, once they are gone
// (5 s at most).
func KillLeftovers(dirs []string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !leftoverOf(pid, dirs) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return killed
}

// leftoverOf reports whether pid is one of our servers working in dirs.
func leftoverOf(pid int, dirs []string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	// The name it was started by (redis-server is a link to
	// redis-check-rdb on Debian: its executable says otherwise).
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil || !slices.Contains(leftoverNames, strings.TrimSpace(string(comm))) {
		return false
	}
	cwd, _ := os.Readlink(proc + "/cwd")
	cmdline, _ := os.ReadFile(proc + "/cmdline")
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if cwd == d || strings.HasPrefix(cwd, d+"/") {
			return true
		}
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if arg == d || strings.HasPrefix(arg, d+"/") {
				return true
			}
		}
	}
	return false
}
