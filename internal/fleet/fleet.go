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

	"github.com/attestd/attestd/internal/devnet"
	"github.com/attestd/attestd/internal/devstack"
	"github.com/attestd/attestd/internal/litewitness"
	"github.com/attestd/attestd/webhook/keyring"
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
	// RulesFile, when set, runs Prometheus (the Debian package) scraping
	// every process with these rules loaded (deploy/prometheus/attestd-rules.yml).
	RulesFile string
	// AlertTimeScale divides the rules' `for` and range windows and the
	// scrape interval (default 1: as written, scraped every 5 s), so a test
	// sees alerts fire and resolve within seconds (ScaleRuleTimes).
	AlertTimeScale int
	// Env is added to every attestd process's environment (last wins).
	Env []string
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
	// WebhookKeys is ATTESTD_WEBHOOK_SECRET_KEYS of every process (made
	// for this fleet), to seal the secrets of webhooks made directly.
	WebhookKeys string

	opt     Options
	closers []func()
}

// URL is the fleet's public API base through nginx, http://127.0.0.1:port/api/v1.
func (f *Fleet) URL() string { return f.Nginx.URL + "/api/v1" }

// Procs is every attestd process.
func (f *Fleet) Procs() []*Proc {
	return append(append(append([]*Proc{}, f.Serve...), f.Index...), f.Worker...)
}

// Start brings the fleet up and returns once every API node answers
// /health with 200 through its own listener and nginx accepts connections.
func Start(ctx context.Context, opt Options) (_ *Fleet, err error) {
	if opt.Bin == "" || opt.Dir == "" || opt.NginxConf == "" {
		return nil, errors.New("fleet: Bin, Dir and NginxConf are required")
	}
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
	log := opt.Log
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

	pg, err := devstack.StartPostgres(ctx, filepath.Join(opt.Dir, "pg"))
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	f.Primary = pg
	f.closers = append(f.closers, pg.Remove)
	log.Info("postgres primary up", "url", pg.URL)
	if err := f.run(ctx, "migrate", append(os.Environ(), "DATABASE_URL="+pg.URL)); err != nil {
		return nil, err
	}
	if !opt.NoReplica {
		r, err := devstack.StartReplica(ctx, pg, filepath.Join(opt.Dir, "pg-replica"))
		if err != nil {
			return nil, fmt.Errorf("read replica: %w", err)
		}
		f.Replica = r
		f.closers = append(f.closers, r.Remove)
		log.Info("postgres read replica up (streaming)", "url", r.URL)
	}
	redisURL, cacheURL, clusterMode := "", "", "off"
	if opt.RedisCluster {
		c, err := devstack.StartRedisCluster(ctx, filepath.Join(opt.Dir, "redis-cluster"), 3)
		if err != nil {
			return nil, fmt.Errorf("redis cluster: %w", err)
		}
		f.RedisCluster, redisURL, clusterMode = c, c.URL, "on"
		f.closers = append(f.closers, c.Stop)
	} else {
		// Two, as deploy/compose.yaml: the state's never evicts, the read
		// cache's evicts its own entries.
		r, err := devstack.StartRedisWith(ctx, filepath.Join(opt.Dir, "redis"), 0, devstack.StateRedisArgs...)
		if err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		f.Redis, redisURL = r, r.URL
		f.closers = append(f.closers, func() { f.Redis.Stop() })
		c, err := devstack.StartRedisWith(ctx, filepath.Join(opt.Dir, "redis-cache"), 0, devstack.CacheRedisArgs...)
		if err != nil {
			return nil, fmt.Errorf("cache redis: %w", err)
		}
		f.CacheRedis, cacheURL = c, c.URL
		f.closers = append(f.closers, c.Stop)
	}
	log.Info("redis up", "url", redisURL, "cache", cacheURL, "cluster", clusterMode)

	chain, err := devnet.Start(ctx, devnet.Config{Agents: opt.Agents, Attestations: opt.Attestations, Rate: opt.Rate,
		SlotInterval: opt.SlotInterval, FinalityDepth: opt.FinalityDepth,
		Logger: opt.Log.With("part", "chain")})
	if err != nil {
		return nil, fmt.Errorf("chain simulator: %w", err)
	}
	f.Chain = chain
	f.closers = append(f.closers, chain.Close)
	log.Info("chain simulator up", "rpc", chain.RPCURL(), "rate", opt.Rate)

	keys, err := keyring.Generate("fleet1")
	if err != nil {
		return nil, err
	}
	f.WebhookKeys = keys
	// nginx's port is chosen now: the nodes speak for its origin.
	nginxPort, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	f.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"ATTESTD_PUBLIC_URL=http://127.0.0.1:" + strconv.Itoa(nginxPort),
		"DATABASE_URL=" + pg.URL, "REDIS_URL=" + redisURL, "ATTESTD_CACHE_REDIS_URL=" + cacheURL, "ATTESTD_REDIS_CLUSTER=" + clusterMode,
		"ATTESTD_SOLANA_RPC_URL=" + chain.RPCURL(), "ATTESTD_SOLANA_WS_URL=" + chain.WSURL(),
		"ATTESTD_WEBHOOK_SECRET_KEYS=" + keys, "ATTESTD_WEBHOOK_ALLOW_LOOPBACK=1",
		// nginx reaches the nodes from 127.0.0.1: only its X-Forwarded-For
		// is believed (everything here is loopback; see docs/operations.md, Scaling out).
		"ATTESTD_TRUSTED_PROXIES=127.0.0.1/32",
		"ATTESTD_LOG_LEVEL=info",
	}
	if f.Replica != nil {
		f.Env = append(f.Env, "DATABASE_READ_URLS="+f.Replica.URL)
	}
	if opt.WitnessedLog {
		logEnv, err := f.startWitnessedLog(ctx)
		if err != nil {
			return nil, err
		}
		f.Env = append(f.Env, logEnv...)
	}
	f.Env = append(f.Env, opt.Env...)

	add := func(role string, n int, list *[]*Proc) error {
		for i := 1; i <= n; i++ {
			p := &Proc{Name: role + "-" + strconv.Itoa(i), Role: role, bin: opt.Bin}
			p.LogPath = filepath.Join(opt.Dir, p.Name+".log")
			mport, err := devstack.FreePort()
			if err != nil {
				return err
			}
			p.MetricsAddr = "127.0.0.1:" + strconv.Itoa(mport)
			env := append([]string{}, f.Env...)
			switch role {
			case "serve":
				port, err := devstack.FreePort()
				if err != nil {
					return err
				}
				p.Addr = "127.0.0.1:" + strconv.Itoa(port)
				// A replacement binds the address while the node drains
				// (Proc.Replace).
				env = append(env, "ATTESTD_HTTP_ADDR="+p.Addr, "ATTESTD_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_REUSE_PORT=on")
			case "index":
				env = append(env, "ATTESTD_INDEXER_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_METRICS_ADDR=")
			case "worker":
				env = append(env, "ATTESTD_WORKER_METRICS_ADDR="+p.MetricsAddr, "ATTESTD_METRICS_ADDR=")
			}
			p.env = env
			if err := p.start(); err != nil {
				return err
			}
			*list = append(*list, p)
		}
		return nil
	}
	f.closers = append(f.closers, f.stopProcs)
	if err := add("index", opt.Index, &f.Index); err != nil {
		return nil, err
	}
	if err := add("worker", opt.Worker, &f.Worker); err != nil {
		return nil, err
	}
	if err := add("serve", opt.Serve, &f.Serve); err != nil {
		return nil, err
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
	log.Info("attestd processes up", "serve", len(f.Serve), "index", len(f.Index), "worker", len(f.Worker))
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
	log.Info("nginx up", "url", n.URL)
	return f, nil
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
