package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/attestd/attestd/internal/settings"
)

// While `attestd local` (make run) runs, it keeps runDir/local.lock locked
// and runDir/stores.env naming the stores it uses, so that one-shot
// commands run from the checkout in another terminal (keys, accounts,
// payments, seed, migrate) find them without DATABASE_URL.
const (
	localRunDir    = ".run"
	storesFileName = "stores.env"
	lockFileName   = "local.lock"
)

// storesVars are the variables stores.env carries, in its order.
var storesVars = []string{"DATABASE_URL", "REDIS_URL", "ATTESTD_CACHE_REDIS_URL", "ATTESTD_REDIS_PREFIX"}

// errLocalRunning: an attestd local holds the directory's lock.
var errLocalRunning = errors.New("an attestd local (make run) is running")

// lockRunDir takes dir's lock without waiting: it fails with
// errLocalRunning while another attestd local holds it. release unlocks.
func lockRunDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w in %s", errLocalRunning, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// localRunning reports whether an attestd local holds dir's lock.
func localRunning(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, lockFileName)); err != nil {
		return false
	}
	release, err := lockRunDir(dir)
	if err != nil {
		return errors.Is(err, errLocalRunning)
	}
	release()
	return false
}

// writeStoresFile writes dir/stores.env (mode 0600: the URLs may carry
// passwords) from getenv, and returns the function that removes it.
func writeStoresFile(dir string, getenv func(string) string) (remove func(), err error) {
	var b strings.Builder
	b.WriteString("# The stores of the attestd local (make run) running in this directory; removed when it stops.\n")
	for _, name := range storesVars {
		if v := getenv(name); v != "" {
			fmt.Fprintf(&b, "%s=%s\n", name, v)
		}
	}
	path := filepath.Join(dir, storesFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return func() { os.Remove(path) }, nil
}

// readStoresFile parses a stores.env: NAME=value lines of storesVars. It
// reads only a regular file of this user's, as writeStoresFile makes: not
// a symlink, not a FIFO (whose open would block the command for good), not
// another account's file.
func readStoresFile(path string) (map[string]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.Mode().IsRegular() || (ok && int(st.Uid) != os.Getuid()) {
		return nil, fmt.Errorf("read %s: not a regular file of this user's", path)
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, value, ok := strings.Cut(line, "=")
		if line == "" || strings.HasPrefix(line, "#") || !ok {
			continue
		}
		for _, v := range storesVars {
			if name == v {
				vals[name] = value
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return vals, nil
}

// runDirCandidates is where to look for a running make run's .run: the
// current directory, then each parent up to the checkout's root (the
// first directory holding go.mod or .git).
func runDirCandidates(cwd string) []string {
	var out []string
	for d := cwd; ; d = filepath.Dir(d) {
		out = append(out, filepath.Join(d, localRunDir))
		if exists(filepath.Join(d, "go.mod")) || exists(filepath.Join(d, ".git")) || d == filepath.Dir(d) {
			return out
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// discoverLocalStores, when neither DATABASE_URL nor REDIS_URL is set,
// takes them (and ATTESTD_REDIS_PREFIX when unset) from the stores.env of
// an attestd local running in the current directory or the checkout's
// root, and says so in one line on w. A stores.env no running local holds
// is left alone. It returns the environment to read settings from: the
// process's, with those stores layered over it when one was found.
func discoverLocalStores(w io.Writer) func(string) string {
	if os.Getenv("DATABASE_URL") != "" || os.Getenv("REDIS_URL") != "" {
		return os.Getenv
	}
	cwd, err := os.Getwd()
	if err != nil {
		return os.Getenv
	}
	for _, dir := range runDirCandidates(cwd) {
		path := filepath.Join(dir, storesFileName)
		if !exists(path) || !localRunning(dir) {
			continue
		}
		vals, err := readStoresFile(path)
		if err != nil || vals["DATABASE_URL"] == "" {
			continue
		}
		env := settings.NewOverlay(os.Getenv)
		for name, v := range vals {
			if os.Getenv(name) == "" {
				env.Set(name, v)
			}
		}
		fmt.Fprintf(w, "attestd: DATABASE_URL not set: using the stores of the make run in %s (%s)\n", filepath.Dir(dir), path)
		return env.Getenv
	}
	return os.Getenv
}
