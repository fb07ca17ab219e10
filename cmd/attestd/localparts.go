package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

// localPart is a server `attestd local` started as a process of its own.
type localPart struct {
	name string          // e.g. "redis (state)"
	log  string          // where its output goes
	done <-chan struct{} // closed when it exits
}

// errPartDied: a server make run started exited while the run went on.
var errPartDied = errors.New("a server make run started exited on its own")

// watchParts stops the run (stop, with errPartDied as the cause) when one
// of parts exits while ctx is live: the API would otherwise go on with a
// store or the witness gone, and every request fail in its own way. One
// line says which part, and where its log is. A part stopped because the
// run ends (ctx done first) says nothing.
func watchParts(ctx context.Context, stop context.CancelCauseFunc, parts []localPart, log *slog.Logger) {
	for _, p := range parts {
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-p.done:
			}
			if ctx.Err() != nil {
				return
			}
			log.Error("a server make run started exited on its own: stopping everything; run make run again",
				"part", p.name, "log", p.log)
			stop(fmt.Errorf("%w: %s (its log: %s)", errPartDied, p.name, p.log))
		}()
	}
}

// reapLeftovers ends the servers a run killed with SIGKILL left behind
// in abs (and the PostgreSQL data kept outside it), so that this run
// starts: it holds abs's lock, so none of them is a live run's.
func reapLeftovers(abs string, log *slog.Logger) {
	dirs := []string{abs}
	if moved, err := devstack.RelocatedDataDirs(filepath.Join(abs, "pg")); err == nil {
		dirs = append(dirs, moved...)
	}
	if killed := devstack.KillLeftovers(dirs); len(killed) > 0 {
		pids := make([]string, len(killed))
		for i, p := range killed {
			pids[i] = strconv.Itoa(p)
		}
		log.Warn("stopped servers an earlier make run left running (it was killed before it could stop them)",
			"pids", strings.Join(pids, " "))
	}
}
