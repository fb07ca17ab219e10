package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// attestd backup and attestd restore as an operator runs them: a backup of
// a seeded database, recorded in it; restored into an empty database,
// migrated and held; a second restore into it refused; attestd log hold
// on another.
func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	src := testenv.Database(t)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "ATTESTD_LOG_LEVEL=warn"}
	env := func(db string) []string { return append(append([]string{}, base...), "DATABASE_URL="+db) }
	runCmd(t, bin, env(src), "migrate")
	runCmd(t, bin, env(src), "seed", "--agents", "2", "--attestations", "40")
	dir := t.TempDir()
	out := strings.TrimSpace(runCmd(t, bin, env(src), "backup", "--dir", dir))
	if filepath.Dir(out) != dir || !strings.HasSuffix(out, ".dump") {
		t.Fatalf("backup printed %q, want a .dump in %s", out, dir)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.partial")); len(matches) > 0 {
		t.Fatalf("left behind: %v", matches)
	}
	ctx := testenv.Context(t, testenv.Patience)
	srcSt, err := store.Open(ctx, src, store.Options{})
	testenv.Must(t, err, "open")
	defer srcSt.Close()
	b, ok, err := srcSt.NewestBackup(ctx)
	if err != nil || !ok || b.File != out || b.Bytes == 0 {
		t.Fatalf("backup not recorded: %+v %v %v", b, ok, err)
	}

	dst := testenv.Database(t)
	runCmd(t, bin, env(dst), "restore", out)
	dstSt, err := store.Open(ctx, dst, store.Options{})
	testenv.Must(t, err, "open restored")
	defer dstSt.Close()
	var want, got int
	testenv.Must(t, srcSt.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations`).Scan(&want), "count")
	testenv.Must(t, dstSt.Pool().QueryRow(ctx, `SELECT count(*) FROM attestations`).Scan(&got), "count restored")
	if want != 40 || got != want {
		t.Fatalf("restored %d attestations of %d", got, want)
	}
	if h, err := dstSt.ReadLogHold(ctx); err != nil || h.HeldSince.IsZero() {
		t.Fatalf("the restored log is not held: %+v %v", h, err)
	}
	if rb, ok, err := dstSt.NewestBackup(ctx); err != nil || !ok || rb.Bytes != b.Bytes || rb.File != out {
		t.Fatalf("the restored database does not record the backup it came from: %+v %v %v (taken %+v)", rb, ok, err, b)
	}
	cmd := exec.CommandContext(ctx, bin, "restore", out)
	cmd.Env = env(dst)
	if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "not empty") {
		t.Fatalf("a restore into a database that holds tables: %v\n%s", err, msg)
	}

	other := testenv.Database(t)
	runCmd(t, bin, env(other), "migrate")
	runCmd(t, bin, env(other), "log", "hold")
	otherSt, err := store.Open(context.Background(), other, store.Options{})
	testenv.Must(t, err, "open")
	defer otherSt.Close()
	if h, err := otherSt.ReadLogHold(ctx); err != nil || h.HeldSince.IsZero() {
		t.Fatalf("attestd log hold did not hold: %+v %v", h, err)
	}
}
