package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devstack"
	"github.com/attestd/attestd/internal/litewitness"
	"github.com/attestd/attestd/translog"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/webhook/keyring"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
)

func runLocal(ctx context.Context, args []string) error {
	fs := newFlags("local")
	dir := fs.String("dir", ".run", "where the local servers keep their files")
	agents := fs.Int("agents", 50, "agents to seed the first time")
	atts := fs.Int("attestations", 100_000, "attestations to seed the first time")
	reset := fs.Bool("reset", false, "delete the demo data (--dir, and the PostgreSQL data kept outside it) and exit; refused while make run runs there")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("local: unexpected arguments %q", fs.Args())
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if *reset {
		return resetLocal(abs, os.Stdout)
	}
	log := newLogger(slog.LevelInfo)
	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	if err := checkListen(cfg.HTTPAddr); err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", abs, err)
	}
	release, err := lockRunDir(abs)
	if errors.Is(err, errLocalRunning) {
		return fmt.Errorf("%w: stop it first (Ctrl-C in its terminal), or give this one another --dir", err)
	}
	if err != nil {
		return err
	}
	defer release()
	// A stores.env left by a local that was killed names stores gone by
	// now; one-shot commands must not take it for this run's meanwhile.
	if err := os.Remove(filepath.Join(abs, storesFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	banner := localBanner{addr: cfg.HTTPAddr, dir: abs}
	if os.Getenv("DATABASE_URL") == "" {
		want := filepath.Join(abs, "pg")
		pg, err := devstack.StartPostgres(ctx, want)
		if err != nil {
			return fmt.Errorf("local postgres: %w", err)
		}
		defer pg.Stop()
		banner.pgData = pg.Dir
		if pg.Relocated {
			log.Info("local postgres data lives outside "+*dir+": the account postgres runs as cannot reach "+abs,
				"data", pg.Dir, "wanted", want)
		} else {
			log.Info("local postgres started", "data", pg.Dir)
		}
		os.Setenv("DATABASE_URL", pg.URL)
	}
	if os.Getenv("REDIS_URL") == "" {
		// One server for state and cache here, bounded and never evicting
		// (docs/operations.md, Redis memory; make cluster runs the pair).
		log.Info("starting local redis (no persistence)")
		r, err := devstack.StartRedisWith(ctx, filepath.Join(abs, "redis"), 0, devstack.StateRedisArgs...)
		if err != nil {
			return fmt.Errorf("local redis: %w", err)
		}
		defer r.Stop()
		os.Setenv("REDIS_URL", r.URL)
	}
	log.Info("local stores ready", "DATABASE_URL", os.Getenv("DATABASE_URL"), "REDIS_URL", os.Getenv("REDIS_URL"))
	// One-shot commands in another terminal find the stores here.
	removeStores, err := writeStoresFile(abs, os.Getenv)
	if err != nil {
		return err
	}
	defer removeStores()
	if err := runSeed(ctx, []string{"--if-empty", "--agents", strconv.Itoa(*agents), "--attestations", strconv.Itoa(*atts)}); err != nil {
		return err
	}
	if err := setLocalPublicURL(log); err != nil {
		return err
	}
	if err := startLocalDevnet(ctx, abs, log); err != nil {
		return err
	}
	banner.rpc = os.Getenv("ATTESTD_SOLANA_RPC_URL")
	lcfg, err := localLogKey(abs, log)
	if err != nil {
		return err
	}
	if err := startLocalWitness(ctx, abs, lcfg, log); err != nil {
		return err
	}
	if err := startLocalIndexer(ctx, log); err != nil {
		return err
	}
	if err := startLocalWorker(ctx, log, abs); err != nil {
		return err
	}
	if os.Getenv("ATTESTD_DRAIN_TIMEOUT") == "" { // no load balancer to tell: Ctrl-C stops at once
		os.Setenv("ATTESTD_DRAIN_TIMEOUT", "0s")
	}
	go banner.printWhenReady(ctx, os.Stderr)
	return runServe(ctx, nil)
}

// setLocalPublicURL sets ATTESTD_PUBLIC_URL, unless the environment names
// it, to http://<ATTESTD_HTTP_ADDR> when the node listens on loopback:
// the origin the browser on this machine uses.
func setLocalPublicURL(log *slog.Logger) error {
	if os.Getenv("ATTESTD_PUBLIC_URL") != "" {
		return nil
	}
	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	if o, ok := config.LoopbackOrigin(cfg.HTTPAddr); ok {
		os.Setenv("ATTESTD_PUBLIC_URL", o.String())
		log.Info("public origin", "ATTESTD_PUBLIC_URL", o.String())
	}
	return nil
}

// localLogKey turns the transparency log on for make run: unless the
// environment names a key, the log's private key is dir/log-key (made on
// first run, readable by its owner only, named after the public origin's
// host), which both the appender beside the local indexer and the node
// read. The verifier key is logged for attestd verify.
func localLogKey(dir string, log *slog.Logger) (translog.Config, error) {
	if os.Getenv("ATTESTD_LOG_KEY") != "" || os.Getenv("ATTESTD_LOG_KEY_FILE") != "" {
		return translog.ConfigFromEnv(nil)
	}
	path := filepath.Join(dir, "log-key")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		name := "attestd.local/log"
		if o, err := config.ParseOrigin(os.Getenv("ATTESTD_PUBLIC_URL")); err == nil {
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
	os.Setenv("ATTESTD_LOG_KEY_FILE", path)
	lcfg, err := translog.ConfigFromEnv(nil)
	if err != nil {
		return translog.Config{}, fmt.Errorf("local log key %s: %w", path, err)
	}
	log.Info("transparency log on", "key_file", path, "verifier_key", lcfg.Key.VerifierKey,
		"try", "attestd verify <attestation pda> --log-key "+lcfg.Key.VerifierKey)
	return lcfg, nil
}

// startLocalWitness starts a witness beside make run's log, unless the
// environment names witnesses or has no log: torchwood's litewitness (the
// project's tool dependency), its key held by an ssh-agent it starts, its
// data under dir/witness, told of the log, with a quorum of 1. So the
// explorer shows a witnessed log. Without the Go toolchain, a checkout or
// ssh-agent the log runs unwitnessed and one line says why.
func startLocalWitness(ctx context.Context, dir string, lcfg translog.Config, log *slog.Logger) error {
	if lcfg.Key.Name == "" || os.Getenv("ATTESTD_LOG_WITNESSES") != "" {
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
	os.Setenv("ATTESTD_LOG_WITNESSES", witnesses)
	os.Setenv("ATTESTD_LOG_WITNESS_QUORUM", "1")
	return nil
}

// startLocalWorker runs a webhook worker in the background. Unless the
// environment names them, the secret key comes from dir/webhook-keys
// (made on first run, readable by its owner only) and loopback receivers
// are allowed, so a receiver on this machine can be tried.
func startLocalWorker(ctx context.Context, log *slog.Logger, dir string) error {
	if os.Getenv("ATTESTD_WEBHOOK_SECRET_KEYS") == "" {
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
		os.Setenv("ATTESTD_WEBHOOK_SECRET_KEYS", strings.TrimSpace(string(b)))
	}
	if os.Getenv("ATTESTD_WEBHOOK_ALLOW_LOOPBACK") == "" {
		os.Setenv("ATTESTD_WEBHOOK_ALLOW_LOOPBACK", "1")
		log.Info("webhooks may deliver to loopback and http:// receivers (local development)")
	}
	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	wcfg, err := webhook.ConfigFromEnv(nil)
	if err != nil {
		return err
	}
	go func() {
		if err := startWorker(ctx, cfg, wcfg, log, prometheus.NewRegistry()); err != nil && ctx.Err() == nil {
			log.Error("local webhook worker stopped", "err", err)
		}
	}()
	return nil
}

// startLocalIndexer runs the indexer in the background, against the chain
// startLocalDevnet started or ATTESTD_SOLANA_RPC_URL names.
func startLocalIndexer(ctx context.Context, log *slog.Logger) error {
	cfg, err := config.FromEnv(nil)
	if err != nil {
		return err
	}
	icfg, err := indexer.ConfigFromEnv(nil)
	if err != nil {
		return err
	}
	go func() {
		if err := startIndexer(ctx, cfg, icfg, log, prometheus.NewRegistry()); err != nil && ctx.Err() == nil {
			log.Error("local indexer stopped", "err", err)
		}
	}()
	return nil
}
