package devstack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// postgresDataDir decides where a server running as cred keeps the data
// asked for at dir. As root the server runs as an unprivileged account, and
// that account must be able to enter every directory above its data: a
// checkout under /root, or any `mktemp -d` (mode 0700), is closed to it.
// Then the data goes to attestd-pg-<hash of dir> under /var/tmp (or the
// system temp directory), made for that account and stable for dir, so a
// local database persists across runs, with an origin file beside it
// naming dir (see RemoveOrphans). relocated says it moved.
func postgresDataDir(dir string, cred *syscall.Credential) (data string, relocated bool, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("postgres dir %s: %w", dir, err)
	}
	if cred == nil {
		return abs, false, nil
	}
	// Parents we create are open to the account (MkdirAll would use dir's
	// 0700 for them).
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", false, fmt.Errorf("create %s: %w", filepath.Dir(abs), err)
	}
	if ok, err := searchable(filepath.Dir(abs), cred); err != nil {
		return "", false, err
	} else if ok {
		return abs, false, nil
	}
	name := relocatedName(abs)
	var tried []string
	for _, base := range relocationBases() {
		if ok, err := searchable(base, cred); err != nil || !ok {
			tried = append(tried, base)
			continue
		}
		data := filepath.Join(base, name)
		if err := ownDir(data, cred); err != nil {
			return "", false, err
		}
		if err := writeOrigin(data, abs); err != nil {
			return "", false, err
		}
		// Housekeeping, best effort: the data of directories deleted
		// since (a test's, a checkout's) goes now.
		_, _ = RemoveOrphans()
		return data, true, nil
	}
	return "", false, fmt.Errorf("postgres runs as uid %d, which cannot enter %s nor any of %v: give it a directory it can reach, or set DATABASE_URL",
		cred.Uid, filepath.Dir(abs), tried)
}

// searchable reports whether the account of cred can reach path: every
// directory from / down to path (symbolic links resolved) lets it search.
// Only mode bits are considered (no ACLs); path must exist.
func searchable(path string, cred *syscall.Credential) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", path, err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false, fmt.Errorf("stat %s: %w", p, err)
		}
		if !fi.IsDir() || !canSearch(fi, cred) {
			return false, nil
		}
		if p == filepath.Dir(p) {
			return true, nil
		}
	}
}

func canSearch(fi fs.FileInfo, cred *syscall.Credential) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	m := fi.Mode().Perm()
	switch {
	case st.Uid == cred.Uid:
		return m&0o100 != 0
	case st.Gid == cred.Gid:
		return m&0o010 != 0
	default:
		return m&0o001 != 0
	}
}

// ownDir makes dir (mode 0700) for the account of cred, or checks that the
// one already there is a real directory of that account (or of root, when
// a previous start stopped before handing it over) that nobody else can
// write: the name is predictable in a shared directory, so a link or
// someone else's directory planted there is refused, never used.
func ownDir(dir string, cred *syscall.Credential) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		if err := os.Lchown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown %s: %w", dir, err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return fmt.Errorf("refusing to keep postgres data in %s: it is not a directory (%s)", dir, fi.Mode().Type())
	case st.Uid != cred.Uid && st.Uid != 0:
		return fmt.Errorf("refusing to keep postgres data in %s: it belongs to uid %d, not %d", dir, st.Uid, cred.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("refusing to keep postgres data in %s: others can write to it (mode %s)", dir, fi.Mode().Perm())
	}
	return nil
}

// relocationBases are the directories a relocated data directory may be
// made in, in the order tried.
func relocationBases() []string { return []string{"/var/tmp", os.TempDir(), "/tmp"} }

// relocatedName names the data directory made for abs outside it: stable
// for abs, so a local database persists across runs.
func relocatedName(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return "attestd-pg-" + hex.EncodeToString(sum[:6])
}

// RelocatedDataDirs lists the directories StartPostgres may have kept
// dir's data in when the server's account could not reach dir (see
// Postgres.Relocated), whether they exist or not: what to delete to
// remove a local database for good.
func RelocatedDataDirs(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("postgres dir %s: %w", dir, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, base := range relocationBases() {
		p := filepath.Join(base, relocatedName(abs))
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
