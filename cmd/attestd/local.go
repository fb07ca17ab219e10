package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
)

// localFlags is what `attestd local` was asked for.
type localFlags struct {
	dir          string // --dir as given
	abs          string // --dir made absolute
	agents, atts int
	reset        bool
}

func runLocal(ctx context.Context, args []string) error {
	f, err := parseLocalFlags(args)
	if err != nil {
		return err
	}
	if f.reset {
		return resetLocal(f.abs, os.Stdout)
	}
	log := newLogger(slog.LevelInfo)
	// What this command starts (stores, chain, keys) is handed to the roles
	// it runs layered over the environment, which stays as it was.
	env := settings.NewOverlay(os.Getenv)
	// The API's address is held from here: the servers started meanwhile
	// take free ports, and one of them could otherwise take this one.
	cfg, ln, err := checkLocalSettings(env)
	if err != nil {
		return err
	}
	defer ln.Close()
	release, err := claimRunDir(f.abs)
	if err != nil {
		return err
	}
	defer release()
	reapLeftovers(f.abs, log)
	banner := localBanner{addr: cfg.HTTPAddr, dir: f.abs}
	stopStores, err := startLocalStores(ctx, env, f, &banner, log)
	defer stopStores()
	if err != nil {
		return err
	}
	// The run ends with a signal, or when a server it started dies
	// (watchParts); deferred after stopStores, so it ends first and
	// stopping the stores is not taken for a death.
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	closeChain, err := prepareLocalRoles(ctx, env, f, &banner, log)
	// The run ends (the roles are told to stop), then the chain closes and
	// saves what it landed before the process exits: the next run's chain
	// knows every transaction the indexer stored.
	defer func() { stopRun(nil); closeChain() }()
	if err != nil {
		return err
	}
	watchParts(ctx, stopRun, banner.parts, log)
	// Every setting of the three roles, read once and checked together.
	s, err := settings.Load(settings.Local, env.Getenv)
	if err != nil {
		return err
	}
	// Tracing (OTLP/HTTP): on when OTEL_EXPORTER_OTLP_ENDPOINT is set; set
	// up before the roles open their stores, so their queries are traced.
	stopTracing, err := tracing.Setup(ctx, "local", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	startLocal(ctx, "indexer", log, func() error { return node.Index(ctx, s, log, prometheus.NewRegistry(), nil) })
	startLocal(ctx, "webhook worker", log, func() error { return node.Worker(ctx, s, log, prometheus.NewRegistry(), nil) })
	startLocal(ctx, "dataset producer", log, func() error { return node.Dataset(ctx, s, log, prometheus.NewRegistry(), nil, false) })
	banner.getenv = env.Getenv
	go banner.printWhenReady(ctx, os.Stderr, log)
	err = node.Serve(ctx, s, log, node.ServeOptions{SkipDrain: secondSignal(ctx), Listener: ln})
	if cause := context.Cause(ctx); errors.Is(cause, errPartDied) {
		return cause
	}
	return err
}

// parseLocalFlags reads `attestd local`'s flags.
func parseLocalFlags(args []string) (localFlags, error) {
	fs := newFlags("local")
	dir := fs.String("dir", ".run", "where the local servers keep their files")
	agents := fs.Int("agents", 50, "agents to seed the first time")
	atts := fs.Int("attestations", 100_000, "attestations to seed the first time")
	reset := fs.Bool("reset", false, "delete the demo data (--dir, and the PostgreSQL data kept outside it) and exit; refused while make run runs there")
	if err := parseFlags(fs, args); err != nil {
		return localFlags{}, err
	}
	if fs.NArg() > 0 {
		return localFlags{}, usageErrorf("local: unexpected arguments %q", fs.Args())
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return localFlags{}, err
	}
	return localFlags{dir: *dir, abs: abs, agents: *agents, atts: *atts, reset: *reset}, nil
}

// checkLocalSettings checks every setting of the three roles before
// anything starts and returns the node's configuration; they are read
// again once the stores, chain and keys this command starts are layered
// over them. The HTTP address must be free: it is bound and returned, for
// the node to serve on.
func checkLocalSettings(env *settings.Overlay) (config.Config, net.Listener, error) {
	if _, err := settings.Load(settings.Local, env.Getenv); err != nil {
		return config.Config{}, nil, err
	}
	cfg, err := config.FromEnv(env.Getenv)
	if err != nil {
		return config.Config{}, nil, err
	}
	ln, err := node.BindHTTP(cfg.HTTPAddr, false)
	if err != nil {
		return config.Config{}, nil, err
	}
	return cfg, ln, nil
}

// claimRunDir creates the run directory and locks it for this run;
// release unlocks it.
func claimRunDir(abs string) (release func(), err error) {
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", abs, err)
	}
	release, err = lockRunDir(abs)
	if errors.Is(err, errLocalRunning) {
		return nil, fmt.Errorf("%w: stop it first (Ctrl-C in its terminal), or give this one another --dir", err)
	}
	if err != nil {
		return nil, err
	}
	// A stores.env left by a local that was killed names stores gone by
	// now; one-shot commands must not take it for this run's meanwhile.
	if err := os.Remove(filepath.Join(abs, storesFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		release()
		return nil, err
	}
	return release, nil
}

// startLocalStores starts PostgreSQL and Redis unless the environment
// names them, and writes the stores file one-shot commands read. stop
// (never nil, also on error) undoes what was started, last first.
func startLocalStores(ctx context.Context, env *settings.Overlay, f localFlags, banner *localBanner, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if env.Getenv("DATABASE_URL") == "" {
		want := filepath.Join(f.abs, "pg")
		pg, err := devstack.StartPostgres(ctx, want)
		if err != nil {
			return stop, fmt.Errorf("local postgres: %w", err)
		}
		stops = append(stops, pg.Stop)
		banner.pgData = pg.Dir
		banner.parts = append(banner.parts, localPart{"postgres", filepath.Join(pg.Dir, "server.log"), pg.Done()})
		if pg.Relocated {
			log.Info("local postgres data lives outside "+f.dir+": the account postgres runs as cannot reach "+f.abs,
				"data", pg.Dir, "wanted", want)
		} else {
			log.Info("local postgres started", "data", pg.Dir)
		}
		env.Set("DATABASE_URL", pg.URL)
	}
	if env.Getenv("REDIS_URL") == "" {
		// The pair every shipped configuration runs (docs/operations.md,
		// Redis memory): state bounded and never evicting, the read cache
		// in a server of its own that evicts its least used entries.
		log.Info("starting local redis for state and one for the cache (no persistence)")
		start := func(part, dir, variable string, args []string) error {
			r, err := devstack.StartRedisWith(ctx, filepath.Join(f.abs, dir), 0, args...)
			if err != nil {
				return fmt.Errorf("local %s: %w", part, err)
			}
			stops = append(stops, r.Stop)
			env.Set(variable, r.URL)
			banner.parts = append(banner.parts, localPart{part, filepath.Join(r.Dir, "redis.log"), r.Done()})
			return nil
		}
		if err := start("redis (state)", "redis", "REDIS_URL", devstack.StateRedisArgs); err != nil {
			return stop, err
		}
		if env.Getenv("ATTESTD_CACHE_REDIS_URL") == "" {
			if err := start("redis (cache)", "redis-cache", "ATTESTD_CACHE_REDIS_URL", devstack.CacheRedisArgs); err != nil {
				return stop, err
			}
			if env.Getenv("ATTESTD_CACHE_MAX_MB") == "" {
				env.Set("ATTESTD_CACHE_MAX_MB", devstack.CacheRedisBudgetMB)
			}
		}
	}
	log.Info("local stores ready", "DATABASE_URL", env.Getenv("DATABASE_URL"), "REDIS_URL", env.Getenv("REDIS_URL"),
		"ATTESTD_CACHE_REDIS_URL", env.Getenv("ATTESTD_CACHE_REDIS_URL"))
	// One-shot commands in another terminal find the stores here.
	removeStores, err := writeStoresFile(f.abs, env.Getenv)
	if err != nil {
		return stop, err
	}
	stops = append(stops, removeStores)
	return stop, nil
}

// prepareLocalRoles seeds the database (applying the schema first: the
// roles started after change none) and layers over env what the roles
// need: the public origin, the chain (after the slots the data uses), the
// log key and its witness, the webhook keys and no drain wait.
// closeChain (never nil) stops the chain and waits until it saved.
func prepareLocalRoles(ctx context.Context, env *settings.Overlay, f localFlags, banner *localBanner, log *slog.Logger) (closeChain func(), err error) {
	closeChain = func() {}
	usedThrough, err := seedWith(ctx, env.Getenv, []string{"--if-empty", "--agents", strconv.Itoa(f.agents), "--attestations", strconv.Itoa(f.atts)})
	if err != nil {
		return closeChain, err
	}
	if err := setLocalPublicURL(env, log); err != nil {
		return closeChain, err
	}
	if closeChain, err = startLocalDevnet(ctx, env, f.abs, usedThrough, log); err != nil {
		return closeChain, err
	}
	banner.rpc = env.Getenv("ATTESTD_SOLANA_RPC_URL")
	lcfg, err := localLogKey(env, f.abs, log)
	if err != nil {
		return closeChain, err
	}
	banner.logKey = lcfg.Key.VerifierKey
	if err := startLocalWitness(ctx, env, f.abs, lcfg, banner, log); err != nil {
		return closeChain, err
	}
	if err := localWebhookKeys(env, f.abs, log); err != nil {
		return closeChain, err
	}
	localDataset(env, f.abs, log)
	if env.Getenv("ATTESTD_DRAIN_TIMEOUT") == "" { // no load balancer to tell: Ctrl-C stops at once
		env.Set("ATTESTD_DRAIN_TIMEOUT", "0s")
	}
	return closeChain, nil
}

// localDataset turns the daily dataset on for make run, unless the
// environment names a bucket: its files in dir/dataset (the filesystem
// through the same blob library as S3 in production), a day cut within
// seconds of being witnessed.
func localDataset(env *settings.Overlay, dir string, log *slog.Logger) {
	if env.Getenv("ATTESTD_DATASET_BUCKET") == "" {
		env.Set("ATTESTD_DATASET_BUCKET", "file://"+filepath.ToSlash(filepath.Join(dir, "dataset"))+"?create_dir=1&no_tmp_dir=1")
	}
	if env.Getenv("ATTESTD_DATASET_INTERVAL") == "" {
		env.Set("ATTESTD_DATASET_INTERVAL", "10s")
	}
	log.Info("dataset on", "bucket", env.Getenv("ATTESTD_DATASET_BUCKET"), "index", "/dataset/index.json")
}

// startLocal runs one of make run's roles in the background, logging why
// it stopped unless the command is ending.
func startLocal(ctx context.Context, what string, log *slog.Logger, run func() error) {
	go func() {
		if err := run(); err != nil && ctx.Err() == nil {
			log.Error("local "+what+" stopped", "err", err)
		}
	}()
}

// setLocalPublicURL sets ATTESTD_PUBLIC_URL, unless the environment names
// it, to http://<ATTESTD_HTTP_ADDR> when the node listens on loopback:
// the origin the browser on this machine uses.
func setLocalPublicURL(env *settings.Overlay, log *slog.Logger) error {
	if env.Getenv("ATTESTD_PUBLIC_URL") != "" {
		return nil
	}
	cfg, err := config.FromEnv(env.Getenv)
	if err != nil {
		return err
	}
	if o, ok := config.LoopbackOrigin(cfg.HTTPAddr); ok {
		env.Set("ATTESTD_PUBLIC_URL", o.String())
		log.Info("public origin", "ATTESTD_PUBLIC_URL", o.String())
	}
	return nil
}

// localLogKey turns the transparency log on for make run: unless the
// environment names a key, the log's private key is dir/log-key (made on
// first run, readable by its owner only, named after the public origin's
// host), which both the appender beside the local indexer and the node
// read. The verifier key is logged; the banner shows the whole attestd
// verify command.
func localLogKey(env *settings.Overlay, dir string, log *slog.Logger) (translog.Config, error) {
	if env.Getenv("ATTESTD_LOG_KEY") != "" || env.Getenv("ATTESTD_LOG_KEY_FILE") != "" {
		return translog.ConfigFromEnv(env.Getenv)
	}
	path := filepath.Join(dir, "log-key")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		name := "attestd.local/log"
		if o, err := config.ParseOrigin(env.Getenv("ATTESTD_PUBLIC_URL")); err == nil {
			name = o.Host + "/log"
		}
		skey, _, err := note.GenerateKey(rand.Reader, name)
		if err != nil {
			return translog.Config{}, fmt.Errorf("local log key: %w", err)
		}
		if err := os.WriteFile(path, []byte(skey+"\n"), 0o600); err != nil {
			return translog.Config{}, fmt.Errorf("local log key: %w", err)
		}
	} else if err != nil {
		return translog.Config{}, fmt.Errorf("local log key: %w", err)
	}
	env.Set("ATTESTD_LOG_KEY_FILE", path)
	lcfg, err := translog.ConfigFromEnv(env.Getenv)
	if err != nil {
		return translog.Config{}, fmt.Errorf("local log key %s: %w", path, err)
	}
	log.Info("transparency log on", "key_file", path, "verifier_key", lcfg.Key.VerifierKey)
	return lcfg, nil
}

// startLocalWitness starts a witness beside make run's log, unless the
// environment names witnesses or has no log: torchwood's litewitness (the
// project's tool dependency), its key held by an ssh-agent it starts, its
// data under dir/witness, told of the log, with a quorum of 1. So the
// explorer shows a witnessed log. Without the Go toolchain, a checkout or
// ssh-agent the log runs unwitnessed and one line says why.
func startLocalWitness(ctx context.Context, env *settings.Overlay, dir string, lcfg translog.Config, banner *localBanner, log *slog.Logger) error {
	if lcfg.Key.Name == "" || env.Getenv("ATTESTD_LOG_WITNESSES") != "" {
		return nil
	}
	if _, err := exec.LookPath("ssh-agent"); err != nil && os.Geteuid() == 0 {
		if err := devstack.AptInstall("openssh-client"); err != nil {
			log.Warn("the log runs unwitnessed: ssh-agent (Debian package openssh-client) holds the local witness's key", "err", err)
			return nil
		}
	}
	w, witnesses, err := litewitness.Local(ctx, ".", filepath.Join(dir, "witness"), "witness.attestd.local/w",
		lcfg.Key.Name, lcfg.Key.VerifierKey, log)
	if err != nil {
		log.Warn("the log runs unwitnessed: the local witness did not start", "err", err)
		return nil
	}
	context.AfterFunc(ctx, w.Stop)
	banner.parts = append(banner.parts, localPart{"witness", filepath.Join(dir, "witness", "litewitness.log"), w.Done()})
	env.Set("ATTESTD_LOG_WITNESSES", witnesses)
	env.Set("ATTESTD_LOG_WITNESS_QUORUM", "1")
	return nil
}

// localWebhookKeys lets make run's webhook worker deliver: unless the
// environment names them, the secret key comes from dir/webhook-keys
// (made on first run, readable by its owner only) and loopback receivers
// are allowed, so a receiver on this machine can be tried.
func localWebhookKeys(env *settings.Overlay, dir string, log *slog.Logger) error {
	if env.Getenv("ATTESTD_WEBHOOK_SECRET_KEYS") == "" {
		path := filepath.Join(dir, "webhook-keys")
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			spec, gerr := keyring.Generate("local1")
			if gerr != nil {
				return gerr
			}
			b, err = []byte(spec), os.WriteFile(path, []byte(spec), 0o600)
		}
		if err != nil {
			return fmt.Errorf("local webhook key %s: %w", path, err)
		}
		env.Set("ATTESTD_WEBHOOK_SECRET_KEYS", strings.TrimSpace(string(b)))
	}
	if env.Getenv("ATTESTD_WEBHOOK_ALLOW_LOOPBACK") == "" {
		env.Set("ATTESTD_WEBHOOK_ALLOW_LOOPBACK", "1")
		log.Info("webhooks may deliver to loopback and http:// receivers (local development)")
	}
	return nil
}
