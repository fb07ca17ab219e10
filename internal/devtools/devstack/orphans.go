package devstack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// originSuffix names the file beside a relocated data directory that
// says which directory it stands for: <base>/attestd-pg-<hash>.origin.
const originSuffix = ".origin"

// writeOrigin records, beside the relocated data directory data, the
// directory abs it was made for, so that it can be found orphaned once
// abs's parent is gone (a temporary directory removed, a checkout deleted
// without `attestd local --reset`).
func writeOrigin(data, abs string) error {
	// A fresh name (O_EXCL), never a predictable one: in a shared
	// directory someone could have planted a link there for root to
	// write through.
	f, err := os.CreateTemp(filepath.Dir(data), filepath.Base(data)+originSuffix+"-*")
	if err != nil {
		return fmt.Errorf("record the origin of %s: %w", data, err)
	}
	_, werr := f.WriteString(abs + "\n")
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o644), os.Rename(f.Name(), data+originSuffix)); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("record the origin of %s: %w", data, err)
	}
	return nil
}

// readOrigin reads the directory an origin file names: only a regular
// file of this process's owner, opened without following a link or
// waiting on a FIFO, and at most 4 KiB of it. ok is false for anything
// else (planted by someone else in the shared directory).
func readOrigin(path string) (abs string, ok bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	if st, isUnix := fi.Sys().(*syscall.Stat_t); !isUnix || int(st.Uid) != os.Geteuid() {
		return "", false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(string(b), "\n"), true
}

// RemoveOrphans deletes the relocated data directories whose directory of
// origin (its parent, which StartPostgres creates) no longer exists and
// whose server is not running, with their origin files, and returns what
// it deleted. Directories made before origins were recorded carry none and
// are left alone. A directory is deleted only when its name is the one
// its recorded origin gives and it is a real directory, never through a
// link: the names are predictable in a shared directory.
func RemoveOrphans() ([]string, error) {
	var removed []string
	var errs []error
	seen := map[string]bool{}
	for _, base := range relocationBases() {
		if seen[base] {
			continue
		}
		seen[base] = true
		origins, err := filepath.Glob(filepath.Join(base, "attestd-pg-*"+originSuffix))
		if err != nil {
			return removed, fmt.Errorf("list %s: %w", base, err)
		}
		for _, o := range origins {
			data := strings.TrimSuffix(o, originSuffix)
			if !orphaned(data, o) {
				continue
			}
			if err := os.RemoveAll(data); err != nil {
				errs = append(errs, fmt.Errorf("remove orphaned postgres data %s: %w", data, err))
				continue
			}
			if err := os.Remove(o); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove %s: %w", o, err))
			}
			removed = append(removed, data)
		}
	}
	return removed, errors.Join(errs...)
}

// orphaned reports whether the relocated directory data, whose origin file
// is origin, stands for a directory that is gone and runs no server.
func orphaned(data, origin string) bool {
	abs, ok := readOrigin(origin)
	if !ok || !filepath.IsAbs(abs) || filepath.Base(data) != relocatedName(abs) {
		return false // not ours, or not for this directory: leave it
	}
	if _, err := os.Stat(filepath.Dir(abs)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, err := os.Lstat(data)
	if errors.Is(err, fs.ErrNotExist) {
		return true // only the origin file is left
	}
	if err != nil || !fi.IsDir() {
		return false
	}
	return !serverRunning(data)
}

// serverRunning reports whether the postmaster.pid in data names a live
// process.
func serverRunning(data string) bool {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return err == nil && pid > 0 && alive(pid)
}
