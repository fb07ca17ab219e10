package testenv

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/config"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/jackc/pgx/v5"
)

// Vars lists the variables of the test suite.
var Vars = []config.Var{
	{Name: EnvPostgres, Default: "(set by make test)", Help: "PostgreSQL server the suite makes its per-test databases on"},
	{Name: EnvRedis, Default: "(set by make test)", Help: "Redis server the suite uses with per-test key prefixes"},
	{Name: "ATTESTD_TEST_LOGS", Default: "(unset)", Help: "1 shows the test nodes' logs"},
	{Name: "ATTESTD_TEST_VERBOSE", Default: "(unset)", Help: "1 shows the indexer tests' logs"},
	{Name: "ATTESTD_TEST_SCREENSHOTS", Default: "(unset)", Help: "a directory: the browser tests save each page they check there, at phone and desktop widths"},
	{Name: "ATTESTD_OPENAPI_RECORD", Default: "(unset)", Help: "a directory: the apptest client writes there one answer of every operation and status it receives (make answers)"},
}

// Environment variables that point tests at servers started once for a
// run (`attestd stores` sets them).
const (
	EnvPostgres = devstack.EnvTestPostgres
	EnvRedis    = devstack.EnvTestRedis
)

var (
	mu      sync.Mutex
	stops   []func()
	tmpDirs []string
)

// Main runs the package's tests and stops the servers they started.
// Call it from TestMain: func TestMain(m *testing.M) { testenv.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	for _, d := range tmpDirs {
		os.RemoveAll(d)
	}
	mu.Unlock()
	os.Exit(code)
}

// TempDir makes a directory that servers run under another account can
// enter when its parent lets them (t.TempDir is private to root), removed
// when the test binary ends. PostgreSQL data whose directory its account
// cannot reach lives elsewhere (devstack.Postgres.Dir) and is removed with
// the server.
func TempDir(tb testing.TB, pattern string) string {
	tb.Helper()
	d, err := tempDir(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func tempDir(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return "", fmt.Errorf("chmod temp dir: %w", err)
	}
	mu.Lock()
	tmpDirs = append(tmpDirs, d)
	mu.Unlock()
	return d, nil
}

// The servers the tests of a binary share: the ones `attestd stores` names
// in the environment, or else started on first use, once (a test that
// waits for the start gets the same server), and stopped by Main.
var (
	sharedPostgres = shared("postgres", EnvPostgres, "attestd-test-pg-", func(dir string) (string, func(), error) {
		pg, err := devstack.StartPostgres(context.Background(), dir+"/data")
		if err != nil {
			return "", nil, err
		}
		return pg.URL, pg.Remove, nil
	})
	sharedRedis = shared("redis", EnvRedis, "attestd-test-redis-", func(dir string) (string, func(), error) {
		r, err := devstack.StartRedis(context.Background(), dir, 0)
		if err != nil {
			return "", nil, err
		}
		return r.URL, r.Stop, nil
	})
)

// shared returns the URL of the server that the variable env names, or
// else of one start makes in a directory of its own, the first time it is
// called; it fails every test that asks when that start failed.
func shared(what, env, pattern string, start func(dir string) (url string, stop func(), err error)) func(testing.TB) string {
	once := sync.OnceValues(func() (string, error) {
		if u := os.Getenv(env); u != "" {
			return u, nil
		}
		dir, err := tempDir(pattern)
		if err != nil {
			return "", err
		}
		url, stop, err := start(dir)
		if err != nil {
			return "", err
		}
		mu.Lock()
		stops = append(stops, stop)
		mu.Unlock()
		return url, nil
	})
	return func(tb testing.TB) string {
		tb.Helper()
		url, err := once()
		if err != nil {
			tb.Fatalf("start %s: %v", what, err)
		}
		return url
	}
}

// Name returns a short random lowercase identifier with the given prefix.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Database creates an empty database for this test on the shared server and
// returns its URL; it is dropped when the test ends.
func Database(tb testing.TB) string {
	tb.Helper()
	return DatabaseOn(tb, sharedPostgres(tb))
}

// DatabaseOn creates an empty database on the server of adminURL.
func DatabaseOn(tb testing.TB, adminURL string) string {
	tb.Helper()
	name := Name("t_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatalf("connect postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return // server gone (a test stopped it): nothing to drop
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return replaceDB(adminURL, name)
}

// replaceDB swaps the database name in a postgres:// URL.
func replaceDB(u, name string) string {
	q := ""
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u, q = u[:i], u[i:]
	}
	i := strings.LastIndexByte(u, '/')
	if i < len("postgres://") {
		return u + "/" + name + q
	}
	return u[:i+1] + name + q
}

// Redis returns the shared Redis server's URL and a key prefix unique to
// this test; keys under the prefix are deleted when the test ends.
func Redis(tb testing.TB) (url, prefix string) {
	tb.Helper()
	url = sharedRedis(tb)
	prefix = Name("t") + ":"
	return url, prefix
}

// OwnPostgres starts a server for this test alone (to stop or kill it).
func OwnPostgres(tb testing.TB) *devstack.Postgres {
	tb.Helper()
	dir := TempDir(tb, "attestd-own-pg-")
	pg, err := devstack.StartPostgres(context.Background(), dir+"/data")
	if err != nil {
		tb.Fatalf("start postgres: %v", err)
	}
	tb.Cleanup(pg.Remove)
	return pg
}

// Replicated is a primary and its streaming replica, started for one test.
type Replicated struct {
	Primary, Replica *devstack.Postgres
	// PrimaryURL and ReplicaURL name one database, made on the primary
	// and replayed by the replica.
	PrimaryURL, ReplicaURL string
}

// OwnReplicated starts a primary for this test alone, makes a database on
// it, and starts a streaming replica of it (pg_basebackup -R); both stop
// when the test ends.
func OwnReplicated(tb testing.TB) Replicated {
	tb.Helper()
	pg := OwnPostgres(tb)
	name := Name("r_")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		tb.Fatalf("connect postgres: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	conn.Close(ctx)
	if err != nil {
		tb.Fatalf("create database: %v", err)
	}
	r, err := devstack.StartReplica(ctx, pg, TempDir(tb, "attestd-replica-")+"/data")
	if err != nil {
		tb.Fatalf("start replica: %v", err)
	}
	tb.Cleanup(r.Stop)
	return Replicated{Primary: pg, Replica: r, PrimaryURL: pg.DatabaseURL(name), ReplicaURL: r.DatabaseURL(name)}
}

// PauseReplay pauses WAL replay on the replica and waits until it has
// stopped: pg_wal_replay_pause only asks, and replay can apply more WAL
// before it stops.
func (r Replicated) PauseReplay(tb testing.TB) {
	tb.Helper()
	r.replay(tb, "SELECT pg_wal_replay_pause()")
	ctx, cancel := context.WithTimeout(context.Background(), Patience+time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.ReplicaURL)
	if err != nil {
		tb.Fatalf("connect replica: %v", err)
	}
	defer conn.Close(ctx)
	WaitForState(tb, "replay paused", Patience, func() (bool, string) {
		var state string
		if err := conn.QueryRow(ctx, "SELECT pg_get_wal_replay_pause_state()").Scan(&state); err != nil {
			tb.Fatalf("replay pause state: %v", err)
		}
		return state == "paused", "state " + state
	})
}

// ResumeReplay resumes WAL replay on the replica.
func (r Replicated) ResumeReplay(tb testing.TB) {
	tb.Helper()
	r.replay(tb, "SELECT pg_wal_replay_resume()")
}

func (r Replicated) replay(tb testing.TB, q string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.ReplicaURL)
	if err != nil {
		tb.Fatalf("connect replica: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// OwnRedis starts a Redis server for this test alone (to stop or kill it).
func OwnRedis(tb testing.TB) *devstack.Redis {
	tb.Helper()
	r, err := devstack.StartRedis(context.Background(), TempDir(tb, "attestd-own-redis-"), 0)
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(r.Stop)
	return r
}

// OwnRedisCluster starts a Redis Cluster of masters nodes for this test alone.
func OwnRedisCluster(tb testing.TB, masters int) *devstack.RedisCluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := devstack.StartRedisCluster(ctx, TempDir(tb, "attestd-own-cluster-"), masters)
	if err != nil {
		tb.Fatalf("start redis cluster: %v", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// Nginx starts nginx for this test alone from the site configuration at
// conf (deploy/nginx.conf), proxying to upstreams; it stops when the test
// ends, and its error log is shown if the test failed.
func Nginx(tb testing.TB, conf string, upstreams ...string) *devstack.Nginx {
	tb.Helper()
	n, err := devstack.StartNginx(context.Background(), TempDir(tb, "attestd-nginx-"), devstack.NginxOptions{Config: conf, Upstreams: upstreams})
	if err != nil {
		tb.Fatalf("start nginx: %v", err)
	}
	tb.Cleanup(func() {
		if log := n.ErrorLog(); tb.Failed() && log != "" {
			tb.Logf("nginx error log:\n%s", log)
		}
		n.Stop()
	})
	return n
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// BuildAttestd builds the attestd command once per test binary and returns
// the path of the executable, for tests that run it as a process.
func BuildAttestd(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir := TempDir(tb, "attestd-bin-")
		bin := filepath.Join(dir, "attestd")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/attestd/attestd/cmd/attestd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/attestd: %w\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return builtBin
}

// Must fails the test on err, with context.
func Must(tb testing.TB, err error, what string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// Output collects what a logger or a child process writes, safe for
// concurrent writers and for reading while they write.
type Output struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Count returns how many times sub was written.
func (o *Output) Count(sub string) int { return strings.Count(o.String(), sub) }

// Gzip compresses b at the best compression (for test bodies and bombs).
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}
