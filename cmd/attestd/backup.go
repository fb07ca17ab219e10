package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/attestd/attestd/internal/backup"
)

const backupUsage = `usage: attestd backup [--dir DIR | --file FILE]

Dumps the database (DATABASE_URL) with pg_dump, in its custom format, to FILE (default: DIR/attestd-<UTC time>.dump)
and records the backup in the database: attestd_backup_age_seconds and the AttestdBackupStale alert follow the newest.
The file appears only once the dump is complete. Restore it with attestd restore (docs/operations.md, Restore).`

const restoreUsage = `usage: attestd restore FILE

Restores a dump attestd backup wrote into the database of DATABASE_URL, which must be empty (createdb a new one),
applies this binary's migrations, and holds the transparency log: no API node serves a checkpoint until attestd
index's appender has asked the witnesses which size they cosigned and the log has regrown to it from the chain.
Then start attestd index, and the API nodes (docs/operations.md, Restore).`

func runBackup(ctx context.Context, args []string) error {
	fs := newFlags("backup")
	dir := fs.String("dir", ".", "the directory the dump is written to, named attestd-<UTC time>.dump")
	file := fs.String("file", "", "the dump's file name (instead of --dir)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, log, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if *file == "" {
		*file = filepath.Join(*dir, "attestd-"+time.Now().UTC().Format("20060102T150405Z")+".dump")
	}
	log.Info("backup: dumping the database", "file", *file)
	b, err := backup.Take(ctx, st, cfg.DatabaseURL, *file)
	if err != nil {
		return err
	}
	log.Info("backup complete", "file", b.File, "bytes", b.Bytes, "log_size", b.LogSize, "chain_slot", b.ChainSlot,
		"took", b.FinishedAt.Sub(b.StartedAt).Round(time.Millisecond).String())
	fmt.Println(b.File)
	return nil
}

func runRestore(ctx context.Context, args []string) error {
	fs := newFlags("restore")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("restore: name the dump to restore\n%s", restoreUsage)
	}
	file := fs.Arg(0)
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	cfg, log, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	applied, err := backup.Restore(ctx, st, cfg.DatabaseURL, file)
	if err != nil {
		return err
	}
	h, err := st.ReadLogHold(ctx)
	if err != nil {
		return err
	}
	log.Info("restore complete; the log is held until attestd index has asked its witnesses and regrown it from the chain",
		"file", file, "log_size", h.Size, "migrations_applied", fmt.Sprint(applied), "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// logHold holds the transparency log of the database (attestd log hold):
// for a database recreated empty, or restored with pg_restore by hand.
func logHold(ctx context.Context, args []string) error {
	fs := newFlags("log hold")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, log, st, err := commandStore(ctx, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.HoldLog(ctx); err != nil {
		return err
	}
	log.Info("log held: no API node serves a checkpoint until attestd index's appender has asked the witnesses which size they cosigned and the log has regrown to it")
	return nil
}
