package devstack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// originSuffix names the file beside a relocated data directory that
// says which directory it stands for: <base>/attestd-pg-<hash>.origin.
const originSuffix = ".origin"

// writeOrigin records, beside the relocated data directory data, the
// directory abs it was made for, so that it can be found orphaned once
// abs's parent is gone (a temporary directory removed, a checkout deleted
// without `attestd local --reset`).
func writeOrigin(data, abs string) error {
	tmp := data + originSuffix + ".tmp"
	if err := os.WriteFile(tmp, []byte(abs+"\n"), 0o644); err != nil {
		return fmt.Errorf("record the origin of %s: %w", data, err)
	}
	if err := os.Rename(tmp, data+originSuffix); err != nil {
		return fmt.Errorf("record the origin of %s: %w", data, err)
	}
	return nil
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
			orphan, err := orphaned(data, o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !orphan {
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
func orphaned(data, origin string) (bool, error) {
	b, err := os.ReadFile(origin)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // another sweep took it
		}
		return false, fmt.Errorf("read %s: %w", origin, err)
	}
	abs := strings.TrimSuffix(string(b), "\n")
	if !filepath.IsAbs(abs) || filepath.Base(data) != relocatedName(abs) {
		return false, nil // not ours, or not for this directory: leave it
	}
	if _, err := os.Stat(filepath.Dir(abs)); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	fi, err := os.Lstat(data)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil // only the origin file is left
	}
	if err != nil || !fi.IsDir() {
		return false, nil
	}
	return !serverRunning(data), nil
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
