package devstack

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// TestRemoveOrphans: the relocated data of a directory that is gone goes,
// with its origin file; the data of a directory still there, of a server
// still running, or planted under a name its origin does not give stays.
func TestRemoveOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("data directories are relocated only when the server runs as another account (as root)")
	}
	cred, err := unprivileged()
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "devstack-orphans-") // 0700: the account cannot enter it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	relocate := func(name string) (origin, data string) {
		t.Helper()
		origin = filepath.Join(base, name, ".run", "pg")
		data, relocated, err := postgresDataDir(origin, cred)
		if err != nil || !relocated {
			t.Fatalf("%s: %v %v", name, relocated, err)
		}
		t.Cleanup(func() { os.RemoveAll(data); os.Remove(data + originSuffix) })
		if b, err := os.ReadFile(data + originSuffix); err != nil || string(b) != origin+"\n" {
			t.Fatalf("%s: origin file %q %v", name, b, err)
		}
		return origin, data
	}
	_, keptData := relocate("kept")
	_, goneData := relocate("gone")
	_, runningData := relocate("running")
	_, plantedData := relocate("planted")
	_, linkData := relocate("link")
	_, fifoData := relocate("fifo")
	// Each relocation sweeps too: the directories go only now.
	for _, p := range []string{"gone", "running", "planted", "link", "fifo"} {
		if err := os.RemoveAll(filepath.Join(base, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(runningData, "postmaster.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"+runningData+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An origin file that names a directory whose data would live under
	// another name (copied, or written by someone else) is not followed.
	if err := os.WriteFile(plantedData+originSuffix, []byte(filepath.Join(base, "elsewhere", ".run", "pg")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A link or a FIFO at an origin file's name (someone else's, in the
	// shared directory) is neither followed nor waited on.
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, []byte(filepath.Join(base, "link", ".run", "pg")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(linkData + originSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, linkData+originSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fifoData + originSuffix); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifoData+originSuffix, 0o644); err != nil {
		t.Fatal(err)
	}

	removed, err := RemoveOrphans()
	if err != nil {
		t.Fatalf("RemoveOrphans: %v", err)
	}
	if !slices.Contains(removed, goneData) {
		t.Errorf("removed %v, want %s among them", removed, goneData)
	}
	for _, p := range []string{goneData, goneData + originSuffix} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	for _, p := range []string{keptData, runningData, plantedData, linkData, fifoData} {
		if slices.Contains(removed, p) {
			t.Errorf("%s removed", p)
		}
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
