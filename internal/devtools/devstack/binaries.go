package devstack

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
)

// Binaries are the absolute paths of the server programs devstack runs.
type Binaries struct {
	InitDB   string
	Postgres string
	Redis    string
}

var (
	findOnce sync.Once
	found    Binaries
	findErr  error
)

// Find locates initdb, postgres and redis-server, installing the Debian
// packages when they are missing and we are root. The result is memoised.
func Find() (Binaries, error) {
	findOnce.Do(func() {
		found, findErr = lookup()
		if findErr == nil {
			return
		}
		if os.Geteuid() != 0 {
			findErr = fmt.Errorf("%w: install them with `sudo apt-get install postgresql redis-server`, or set DATABASE_URL and REDIS_URL", findErr)
			return
		}
		slog.Info("installing postgresql and redis-server with apt-get", "missing", findErr.Error())
		if err := AptInstall("postgresql", "redis-server"); err != nil {
			findErr = fmt.Errorf("install server packages: %w", err)
			return
		}
		found, findErr = lookup()
	})
	return found, findErr
}

func lookup() (Binaries, error) {
	var b Binaries
	var missing []string
	pgBin := postgresBinDir()
	b.InitDB = firstExisting(pathOf("initdb"), filepath.Join(pgBin, "initdb"))
	b.Postgres = firstExisting(pathOf("postgres"), filepath.Join(pgBin, "postgres"))
	b.Redis = firstExisting(pathOf("redis-server"), "/usr/bin/redis-server", "/usr/sbin/redis-server")
	if b.InitDB == "" || b.Postgres == "" {
		missing = append(missing, "postgres/initdb")
	}
	if b.Redis == "" {
		missing = append(missing, "redis-server")
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("server binaries not found: %v", missing)
	}
	return b, nil
}

// postgresBinDir returns the newest /usr/lib/postgresql/<v>/bin, Debian's layout.
func postgresBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return ""
	}
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	return dirs[0]
}

func versionOf(binDir string) int {
	var v int
	fmt.Sscanf(filepath.Base(filepath.Dir(binDir)), "%d", &v)
	return v
}

func pathOf(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// AptInstall installs Debian packages with apt-get (as root). Test
// packages run in parallel processes and several of them may install at
// once (Chromium, nginx, the servers): installs are taken one at a time
// through a lock file, and apt-get itself waits for a dpkg lock another
// program holds instead of failing at once.
func AptInstall(pkgs ...string) error {
	unlock, err := lockFile(filepath.Join(os.TempDir(), "attestd-apt.lock"))
	if err != nil {
		return fmt.Errorf("apt-get: %w", err)
	}
	defer unlock()
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	wait := []string{"-o", "DPkg::Lock::Timeout=600"}
	update := exec.Command("apt-get", append(wait, "update", "-qq")...)
	update.Env = env
	if out, err := update.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w: %s", err, tail(out))
	}
	args := append(wait, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pkgs...)...)
	install := exec.Command("apt-get", args...)
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install: %w: %s", err, tail(out))
	}
	return nil
}

// lockFile holds an exclusive flock on path until the returned func runs.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

func tail(b []byte) string {
	const n = 2000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var errNoUser = errors.New("no unprivileged user to run postgres as")
