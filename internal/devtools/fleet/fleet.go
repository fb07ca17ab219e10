package fleet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/devtools/seaweed"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"golang.org/x/mod/sumdb/note"
)

// Options shape a fleet. Zero values take the defaults noted.
type Options struct {
	Bin       string // the attestd binary (required)
	Dir       string // working files: data, logs (required)
	NginxConf string // the nginx site to run (required: deploy/nginx.conf)
	// Serve, Index, Worker: processes of each role (default 3, 2, 2).
	Serve, Index, Worker int
	// RedisCluster runs a three-master Redis Cluster instead of one server.
	RedisCluster bool
	// NoReplica runs PostgreSQL without a read replica.
	NoReplica bool
	// Agents and Attestations are the chain's traffic at start (default
	// 20 and 2,000); Rate the attestations per second it keeps producing
	// (0: none; the cluster command uses 20).
	Agents, Attestations int
	Rate                 float64
	// SlotInterval and FinalityDepth of the chain (default 400 ms, 32).
	SlotInterval  time.Duration
	FinalityDepth uint64
	// NginxWorkers is nginx's worker_processes (default 1).
	NginxWorkers int
	// WitnessedLog runs the transparency log (its key made for the fleet
	// in Dir/log-key; the indexers append, the nodes serve) with one local
	// witness cosigning it: torchwood's litewitness, quorum 1.
	WitnessedLog bool
	// Dataset runs a real S3-compatible store (SeaweedFS, the project's Go
	// tool dependency) and one attestd dataset writing the daily files into
	// it; the API nodes serve them from it. It needs WitnessedLog.
	Dataset bool
	// RulesFile, when set, runs Prometheus (the Debian package) scraping
	// every process with these rules loaded (deploy/prometheus/attestd-rules.yml).
	RulesFile string
	// AlertTimeScale divides the rules' `for` and range windows and the
	// scrape interval (default 1: as written, scraped every 5 s), so a test
	// sees alerts fire and resolve within seconds (ScaleRuleTimes).
	AlertTimeScale int
	// Env is added to every attestd process's environment (last wins).
	Env []string
	// Setup, when set, runs once the chain is up and before any attestd
	// process starts (accounts for x402 payments, say); the environment
	// it returns is added to every process's after Env.
	Setup func(ctx context.Context, chain *devnet.Chain) (env []string, err error)
	// Log receives progress lines (default: discarded).
	Log *slog.Logger
}

// Fleet is a running deployment. Close stops everything.
type Fleet struct {
	Primary, Replica *devstack.Postgres
	Redis            *devstack.Redis        // nil with RedisCluster
	CacheRedis       *devstack.Redis        // the read cache's (ATTESTD_CACHE_REDIS_URL); nil with RedisCluster
	RedisCluster     *devstack.RedisCluster // nil without
	Chain            *devnet.Chain
	Nginx            *devstack.Nginx
	Serve            []*Proc
	Index            []*Proc
	Worker           []*Proc
	// Env is the environment every attestd process shares (without its
	// own listeners).
	Env []string
	// Prometheus scrapes the fleet (nil without RulesFile).
	Prometheus *devstack.Prometheus
	// Witness cosigns the log (nil without WitnessedLog).
	Witness *litewitness.Witness
	// S3 holds the dataset's files, and Dataset writes them (nil without
	// Options.Dataset).
	S3      *seaweed.Server
	Dataset []*Proc
	// WebhookKeys is ATTESTD_WEBHOOK_SECRET_KEYS of every process (made
	// for this fleet), to seal the secrets of webhooks made directly.
	WebhookKeys string

	opt     Options
	closers []func()
	// targetsMu guards targetsDir, Prometheus's file_sd directory ("":
	// no Prometheus, or stopped), and serializes its rewrites.
	targetsMu  sync.Mutex
	targetsDir string
}

// URL is the fleet's public API base through nginx, http://127.0.0.1:port/api/v1.
func (f *Fleet) URL() string { return f.Nginx.URL + "/api/v1" }

// Procs is every attestd process.
func (f *Fleet) Procs() []*Proc {
	return append(append(append(append([]*Proc{}, f.Serve...), f.Index...), f.Worker...), f.Dataset...)
}

// Start brings the fleet up and returns once every API node answers
// /health with 200 through its own listener and nginx accepts connections.
// In order: the stores (PostgreSQL migrated, its replica, Redis), the
// chain, the processes' shared environment (with the witnessed log), the
// attestd processes, Prometheus, and nginx in front of the API nodes.
func Start(ctx context.Context, opt Options) (_ *Fleet, err error) {
	if opt.Bin == "" || opt.Dir == "" || opt.NginxConf == "" {
		return nil, errors.New("fleet: Bin, Dir and NginxConf are required")
	}
	opt = opt.withDefaults()
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet dir: %w", err)
	}
	if err := os.Chmod(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	f := &Fleet{opt: opt}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := f.startPostgres(ctx); err != nil {
		return nil, err
	}
	stores, err := f.startRedis(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.startChain(ctx); err != nil {
		return nil, err
	}
	// nginx's port is chosen now: the nodes speak for its origin.
	nginxPort, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	if err := f.shareEnv(ctx, stores, nginxPort); err != nil {
		return nil, err
	}
	upstreams, err := f.startProcs(ctx)
	if err != nil {
		return nil, err
	}
	if opt.RulesFile != "" {
		if err := f.startPrometheus(ctx); err != nil {
			return nil, fmt.Errorf("prometheus: %w", err)
		}
	}
	n, err := devstack.StartNginx(ctx, filepath.Join(opt.Dir, "nginx"), devstack.NginxOptions{Config: opt.NginxConf, Upstreams: upstreams,
		Workers: opt.NginxWorkers, Port: nginxPort})
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	f.Nginx = n
	f.closers = append(f.closers, n.Stop)
	opt.Log.Info("nginx up", "url", n.URL)
	return f, nil
}

// withDefaults fills the options left zero.
func (opt Options) withDefaults() Options {
	opt.Serve, opt.Index, opt.Worker = orDefault(opt.Serve, 3), orDefault(opt.Index, 2), orDefault(opt.Worker, 2)
	opt.Agents, opt.Attestations = orDefault(opt.Agents, 20), orDefault(opt.Attestations, 2000)
	if opt.SlotInterval == 0 {
		opt.SlotInterval = 400 * time.Millisecond
	}
	if opt.FinalityDepth == 0 {
		opt.FinalityDepth = 32
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return opt
}

// startPostgres starts the primary, migrates it, and starts its streaming
// read replica (unless NoReplica).
func (f *Fleet) startPostgres(ctx context.Context) error {
	pg, err := devstack.StartPostgres(ctx, filepath.Join(f.opt.Dir, "pg"))
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	f.Primary = pg
	f.closers = append(f.closers, pg.Remove)
	f.opt.Log.Info("postgres primary up", "url", pg.URL)
	if err := f.run(ctx, "migrate", append(os.Environ(), "DATABASE_URL="+pg.URL)); err != nil {
		return err
	}
	if f.opt.NoReplica {
		return nil
	}
	r, err := devstack.StartReplica(ctx, pg, filepath.Join(f.opt.Dir, "pg-replica"))
	if err != nil {
		return fmt.Errorf("read replica: %w", err)
	}
	f.Replica = r
	f.closers = append(f.closers, r.Remove)
	f.opt.Log.Info("postgres read replica up (streaming)", "url", r.URL)
	return nil
}

// redisURLs are the Redis settings every process shares.
type redisURLs struct {
	state, cache, cluster string // REDIS_URL, ATTESTD_CACHE_REDIS_URL, ATTESTD_REDIS_CLUSTER
}

// startRedis starts a three-master Redis Cluster (RedisCluster), or two
// servers as deploy/compose.yaml: the state's never evicts, the read
// cache's evicts its own entries.
func (f *Fleet) startRedis(ctx context.Context) (redisURLs, error) {
	u := redisURLs{cluster: "off"}
	if f.opt.RedisCluster {
		c, err := devstack.StartRedisCluster(ctx, filepath.Join(f.opt.Dir, "redis-cluster"), 3)
		if err != nil {
			return u, fmt.Errorf("redis cluster: %w", err)
		}
		f.RedisCluster, u.state, u.cluster = c, c.URL, "on"
		f.closers = append(f.closers, c.Stop)
	} else {
		r, err := devstack.StartRedisWith(ctx, filepath.Join(f.opt.Dir, "redis"), 0, devstack.StateRedisArgs...)
		if err != nil {
			return u, fmt.Errorf("redis: %w", err)
		}
		f.Redis, u.state = r, r.URL
		f.closers = append(f.closers, func() { f.Redis.Stop() })
		c, err := devstack.StartRedisWith(ctx, filepath.Join(f.opt.Dir, "redis-cache"), 0, devstack.CacheRedisArgs...)
		if err != nil {
			return u, fmt.Errorf("cache redis: %w", err)
		}
		f.CacheRedis, u.cache = c, c.URL
		f.closers = append(f.closers, c.Stop)
	}
	f.opt.Log.Info("redis up", "url", u.state, "cache", u.cache, "cluster", u.cluster)
	return u, nil
}

// startChain starts the chain simulator with the options' traffic.
func (f *Fleet) startChain(ctx context.Context) error {
	opt := f.opt
	chain, err := devnet.Start(ctx, devnet.Config{Agents: opt.Agents, Attestations: opt.Attestations, Rate: opt.Rate,
		SlotInterval: opt.SlotInterval, FinalityDepth: opt.FinalityDepth,
		Logger: opt.Log.With("part", "chain")})
	if err != nil {
		return fmt.Errorf("chain simulator: %w", err)
	}
	f.Chain = chain
	f.closers = append(f.closers, chain.Close)
	opt.Log.Info("chain simulator up", "rpc", chain.RPCURL(), "rate", opt.Rate)
	return nil
}

// shareEnv makes the environment every attestd process shares: the
// stores, the chain, webhook keys made for this fleet, nginx's origin at
// nginxPort, the witnessed log, then Options.Env.
func (f *Fleet) shareEnv(ctx context.Context, stores redisURLs, nginxPort int) error {
	keys, err := keyring.Generate("fleet1")
	if err != nil {
		return err
	}
	f.WebhookKeys = keys
	f.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"ATTESTD_PUBLIC_URL=http://127.0.0.1:" + strconv.Itoa(nginxPort),
		"DATABASE_URL=" + f.Primary.URL, "REDIS_URL=" + stores.state, "ATTESTD_CACHE_REDIS_URL=" + stores.cache,
		"ATTESTD_REDIS_CLUSTER=" + stores.cluster,
		"ATTESTD_SOLANA_RPC_URL=" + f.Chain.RPCURL(), "ATTESTD_SOLANA_WS_URL=" + f.Chain.WSURL(),
		"ATTESTD_WEBHOOK_SECRET_KEYS=" + keys, "ATTESTD_WEBHOOK_ALLOW_LOOPBACK=1",
		// nginx reaches the nodes from 127.0.0.1: only its X-Forwarded-For
		// is believed (everything here is loopback; see docs/operations.md, Scaling out).
		"ATTESTD_TRUSTED_PROXIES=127.0.0.1/32",
		"ATTESTD_LOG_LEVEL=info",
	}
	if f.Replica != nil {
		f.Env = append(f.Env, "DATABASE_READ_URLS="+f.Replica.URL)
	}
	if stores.cache != "" {
		f.Env = append(f.Env, "ATTESTD_CACHE_MAX_MB="+devstack.CacheRedisBudgetMB)
	}
	if f.opt.WitnessedLog {
		logEnv, err := f.startWitnessedLog(ctx)
		if err != nil {
			return err
		}
		f.Env = append(f.Env, logEnv...)
	}
	if f.opt.Dataset {
		dsEnv, err := f.startS3(ctx)
		if err != nil {
			return err
		}
		f.Env = append(f.Env, dsEnv...)
	}
	f.Env = append(f.Env, f.opt.Env...)
	if f.opt.Setup != nil {
		env, err := f.opt.Setup(ctx, f.Chain)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		f.Env = append(f.Env, env...)
	}
	return nil
}

// startProcs starts the indexers, the workers and the API nodes, and
// waits (90 s at most) until each is ready; it returns the API nodes'
// addresses, nginx's upstreams.
func (f *Fleet) startProcs(ctx context.Context) ([]string, error) {
	opt := f.opt
	f.closers = append(f.closers, f.stopProcs)
	for _, r := range []struct {
		role string
		n    int
		list *[]*Proc
	}{{"index", opt.Index, &f.Index}, {"worker", opt.Worker, &f.Worker}, {"serve", opt.Serve, &f.Serve}, {"dataset", datasets(opt), &f.Dataset}} {
		for i := 1; i <= r.n; i++ {
			p, err := f.newProc(r.role, i)
			if err != nil {
				return nil, err
			}
			if err := p.start(); err != nil {
				return nil, err
			}
			*r.list = append(*r.list, p)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var upstreams []string
	for _, p := range f.Procs() {
		if err := p.Ready(rctx); err != nil {
			return nil, err
		}
		if p.Role == "serve" {
			upstreams = append(upstreams, p.Addr)
		}
	}
	opt.Log.Info("attestd processes up", "serve", len(f.Serve), "index", len(f.Index), "worker", len(f.Worker), "dataset", len(f.Dataset))
	return upstreams, nil
}

// newProc is the i-th process of role, with its own listeners (free
// ports) added to the shared environment; not started.
func (f *Fleet) newProc(role string, i int) (*Proc, error) {
	p := &Proc{Name: role + "-" + strconv.Itoa(i), Role: role, bin: f.opt.Bin, changed: f.targetsChanged}
	p.LogPath = filepath.Join(f.opt.Dir, p.Name+".log")
	mport, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	p.MetricsAddr = "127.0.0.1:" + strconv.Itoa(mport)
	env := append([]string{}, f.Env...)
	switch role {
	case "serve":
		port, err := devstack.FreePort()
		if err != nil {
			return nil, err
		}
		p.Addr = "127.0.0.1:" + strconv.Itoa(port)
		// A replacement binds the address while the node drains
		// (Proc.Replace).
		env = append(env, "ATTESTD_HTTP_ADDR="+p.Addr, "ATTESTD_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_REUSE_PORT=on")
	case "index":
		env = append(env, "ATTESTD_INDEXER_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_METRICS_ADDR=")
	case "worker":
		env = append(env, "ATTESTD_WORKER_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_METRICS_ADDR=")
	case "dataset":
		env = append(env, "ATTESTD_DATASET_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_METRICS_ADDR=")
	}
	p.env = env
	return p, nil
}

// startWitnessedLog makes the log's key and starts a witness told of it;
// it returns the processes' log settings.
func (f *Fleet) startWitnessedLog(ctx context.Context) ([]string, error) {
	const origin = "attestd.cluster/log"
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	keyFile := filepath.Join(f.opt.Dir, "log-key")
	if err := os.WriteFile(keyFile, []byte(skey+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	w, witnesses, err := litewitness.Local(ctx, ".", filepath.Join(f.opt.Dir, "witness"), "witness.attestd.cluster/w",
		origin, vkey, f.opt.Log)
	if err != nil {
		return nil, err
	}
	f.Witness = w
	f.closers = append(f.closers, w.Stop)
	f.opt.Log.Info("transparency log on", "verifier_key", vkey)
	return []string{"ATTESTD_LOG_KEY_FILE=" + keyFile, "ATTESTD_LOG_WITNESSES=" + witnesses, "ATTESTD_LOG_WITNESS_QUORUM=1"}, nil
}

// datasets is how many dataset producers run: one with Options.Dataset.
func datasets(opt Options) int {
	if opt.Dataset {
		return 1
	}
	return 0
}

// startS3 starts SeaweedFS for the dataset's files; it returns the
// processes' dataset settings (the bucket, its credentials, a day cut
// within seconds of being witnessed).
func (f *Fleet) startS3(ctx context.Context) ([]string, error) {
	f.opt.Log.Info("S3 store: building SeaweedFS (go tool weed; the first build takes minutes, later ones none)")
	bin, err := seaweed.Binary(ctx, ".")
	if err != nil {
		return nil, err
	}
	s3, err := seaweed.Start(ctx, seaweed.Options{Binary: bin, Dir: filepath.Join(f.opt.Dir, "s3")})
	if err != nil {
		return nil, fmt.Errorf("seaweedfs: %w", err)
	}
	f.S3 = s3
	f.closers = append(f.closers, s3.Stop)
	f.opt.Log.Info("S3 store up (SeaweedFS)", "endpoint", s3.Endpoint, "bucket", s3.Bucket)
	return append(s3.Env(), "ATTESTD_DATASET_BUCKET="+s3.URL(), "ATTESTD_DATASET_INTERVAL=10s"), nil
}

// run runs `attestd args...` to completion.
func (f *Fleet) run(ctx context.Context, role string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.opt.Bin, role)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("attestd %s: %w: %s", role, err, out)
	}
	return nil
}

// RestartRedis stops both Redis servers, the state's and the cache's
// (SIGTERM; they keep no data), and starts new ones on the same ports:
// every key is gone, as after a crash of servers without persistence.
func (f *Fleet) RestartRedis(ctx context.Context, down func()) error {
	if f.Redis == nil {
		return errors.New("RestartRedis: the fleet runs a Redis Cluster")
	}
	port, dir := f.Redis.Port(), f.Redis.Dir
	cport, cdir := f.CacheRedis.Port(), f.CacheRedis.Dir
	f.Redis.Stop()
	f.CacheRedis.Stop()
	if down != nil {
		down()
	}
	r, err := devstack.StartRedisWith(ctx, dir, port, devstack.StateRedisArgs...)
	if err != nil {
		return fmt.Errorf("restart redis on port %d: %w", port, err)
	}
	f.Redis = r
	c, err := devstack.StartRedisWith(ctx, cdir, cport, devstack.CacheRedisArgs...)
	if err != nil {
		return fmt.Errorf("restart the cache's redis on port %d: %w", cport, err)
	}
	f.CacheRedis = c
	return nil
}

// stopProcs stops every attestd process at once (API nodes drain in
// parallel rather than one after the other).
func (f *Fleet) stopProcs() {
	var wg sync.WaitGroup
	for _, p := range f.Procs() {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop() }()
	}
	wg.Wait()
}

// Close stops every part, newest first.
func (f *Fleet) Close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	f.closers = nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
