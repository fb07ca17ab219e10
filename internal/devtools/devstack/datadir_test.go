package devstack

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestPostgresDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the data directory moves only when the server runs as another account (as root)")
	}
	cred, err := unprivileged()
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "devstack-datadir-") // 0700, root's
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}

	// A directory whose parents the account cannot search moves, to the
	// same place every time, and a different place for another directory.
	private := filepath.Join(base, "checkout", ".run", "pg")
	got, relocated, err := postgresDataDir(private, cred)
	if err != nil || !relocated || !strings.Contains(filepath.Base(got), "attestd-pg-") {
		t.Fatalf("private dir: %s %v %v", got, relocated, err)
	}
	t.Cleanup(func() { os.RemoveAll(got) })
	fi, err := os.Lstat(got)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != cred.Uid {
		t.Fatalf("relocated dir %s: %v %v", got, fi.Mode(), err)
	}
	if ok, err := searchable(got, cred); err != nil || !ok {
		t.Fatalf("the account cannot reach its relocated dir %s: %v", got, err)
	}
	again, _, err := postgresDataDir(private, cred)
	if err != nil || again != got {
		t.Fatalf("second call: %s %v, want %s", again, err, got)
	}
	other, _, err := postgresDataDir(filepath.Join(base, "other", "pg"), cred)
	if err != nil || other == got {
		t.Fatalf("another directory shares %s (%v)", other, err)
	}
	os.RemoveAll(other)

	// A directory it can reach stays where it is.
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	if got, relocated, err := postgresDataDir(filepath.Join(open, "pg"), cred); err != nil || relocated || got != filepath.Join(open, "pg") {
		t.Fatalf("reachable dir: %s %v %v", got, relocated, err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}

	// What someone else planted at the predictable name is refused.
	planted := []struct {
		name  string
		plant func(p string) error
	}{
		{"symlink", func(p string) error { return os.Symlink(open, p) }},
		{"file", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"another owner", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chown(p, int(cred.Uid)+1, int(cred.Gid))
		}},
		{"writable by others", func(p string) error {
			if err := os.Mkdir(p, 0o777); err != nil {
				return err
			}
			return os.Chmod(p, 0o777)
		}},
	}
	for _, pl := range planted {
		p := filepath.Join(open, "planted-"+strings.ReplaceAll(pl.name, " ", "-"))
		if err := pl.plant(p); err != nil {
			t.Fatal(err)
		}
		if err := ownDir(p, cred); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("%s: %v, want a refusal", pl.name, err)
		}
	}
}

func TestCanSearch(t *testing.T) {
	cred := &syscall.Credential{Uid: 1000, Gid: 2000}
	for _, tc := range []struct {
		uid, gid uint32
		mode     os.FileMode
		want     bool
	}{
		{1000, 0, 0o700, true}, {1000, 0, 0o077, false},
		{0, 2000, 0o710, true}, {0, 2000, 0o701, false},
		{0, 0, 0o701, true}, {0, 0, 0o770, false}, {0, 0, 0o755, true},
	} {
		fi := fakeInfo{mode: os.ModeDir | tc.mode, st: &syscall.Stat_t{Uid: tc.uid, Gid: tc.gid}}
		if got := canSearch(fi, cred); got != tc.want {
			t.Errorf("owner %d group %d mode %o: %v", tc.uid, tc.gid, tc.mode, got)
		}
	}
}

type fakeInfo struct {
	os.FileInfo
	mode os.FileMode
	st   *syscall.Stat_t
}

func (f fakeInfo) Mode() os.FileMode { return f.mode }
func (f fakeInfo) Sys() any          { return f.st }
