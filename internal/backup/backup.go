package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/store"
)

// Tool finds a PostgreSQL client program: on PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin (the newest), where the postgresql
// packages put them without linking every one onto PATH.
func Tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in /usr/lib/postgresql/*/bin: install the PostgreSQL client (Debian: apt install postgresql-client)", name)
}

// version is the number in /usr/lib/postgresql/<version>/bin (0 if none).
func version(dir string) int {
	n := 0
	for _, r := range filepath.Base(filepath.Dir(dir)) {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// Take dumps the database at dbURL (the database st is open on) into
// file, in pg_dump's custom format, and records the backup in it. The
// file appears whole or not at all: the dump is written beside it and
// renamed when pg_dump succeeded.
func Take(ctx context.Context, st *store.Store, dbURL, file string) (store.Backup, error) {
	pgDump, err := Tool("pg_dump")
	if err != nil {
		return store.Backup{}, err
	}
	b := store.Backup{StartedAt: time.Now().UTC(), File: file}
	// pg_dump reads in a snapshot exported here, in which the marks are
	// read too: they are the dump's own.
	snap, err := st.ExportBackupSnapshot(ctx)
	if err != nil {
		return store.Backup{}, err
	}
	b.LogSize, b.ChainSlot = snap.LogSize, snap.Slot
	tmp := file + ".partial"
	cmd := exec.CommandContext(ctx, pgDump, "--format=custom", "--no-owner", "--no-privileges", "--snapshot="+snap.ID,
		"--file="+tmp, "--dbname="+dbURL)
	out, err := cmd.CombinedOutput()
	snap.Release()
	if err != nil {
		os.Remove(tmp)
		return store.Backup{}, fmt.Errorf("pg_dump: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return store.Backup{}, err
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return store.Backup{}, fmt.Errorf("backup: %w", err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return store.Backup{}, fmt.Errorf("backup: %w", err)
	}
	b.Bytes, b.FinishedAt = fi.Size(), time.Now().UTC()
	if err := st.RecordBackup(ctx, b); err != nil {
		return b, fmt.Errorf("the dump %s is complete, but: %w", file, err)
	}
	return b, nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", name, err)
	}
	return nil
}

// ErrNotEmpty is Restore's refusal of a database that holds tables.
var ErrNotEmpty = errors.New("the database is not empty")

// Restore loads file (a dump Take wrote) into the empty database st is
// open on (at dbURL), applies the migrations this binary has that the
// dump's schema lacks, holds the transparency log (store.HoldLog) and
// records the dump as the database's newest backup.
// It refuses a database that holds any table: a restore never merges
// into, or replaces, data that is there.
func Restore(ctx context.Context, st *store.Store, dbURL, file string) (applied []string, err error) {
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	var tables int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&tables); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if tables > 0 {
		return nil, fmt.Errorf("restore: %w (%d tables): restore into a new database (createdb), then point DATABASE_URL at it", ErrNotEmpty, tables)
	}
	pgRestore, err := Tool("pg_restore")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, pgRestore, "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction", "--dbname="+dbURL, file)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_restore: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if applied, err = st.Migrate(ctx); err != nil {
		return nil, err
	}
	if err := st.HoldLog(ctx); err != nil {
		return applied, err
	}
	// The dump does not hold its own record (written once it was
	// complete): the restored database records it, so the newest backup's
	// age is known again (the file's time is when its dump completed).
	if err := recordRestored(ctx, st, file); err != nil {
		return applied, err
	}
	return applied, nil
}

// recordRestored records file, just restored into st, as a backup of it.
func recordRestored(ctx context.Context, st *store.Store, file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	size, slot, err := st.BackupMark(ctx)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	at := fi.ModTime().UTC()
	return st.RecordBackup(ctx, store.Backup{StartedAt: at, FinishedAt: at, File: abs, Bytes: fi.Size(), LogSize: size, ChainSlot: slot})
}
