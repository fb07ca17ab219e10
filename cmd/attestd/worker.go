package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/webhook/queue"
	"github.com/prometheus/client_golang/prometheus"
)

// runWorker delivers webhooks until it is stopped: the outbox relay, the
// fan-out and the senders. Run as many as you like.
func runWorker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	reseal := fs.Bool("reseal", false, "re-seal every webhook secret under the first key of ATTESTD_WEBHOOK_SECRET_KEYS, then exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, log, err := loadSettings(settings.Worker, nil)
	if err != nil {
		return err
	}
	// Tracing (OTLP/HTTP): on when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	stopTracing, err := tracing.Setup(ctx, "worker", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := requireSchema(ctx, s.Common, log); err != nil {
		return err
	}
	if *reseal {
		return resealSecrets(ctx, s.Common, s.Webhook, log)
	}
	reg := newRegistry()
	health := newProcHealth(ctx, "worker")
	serveInternal(ctx, s.Webhook.MetricsAddr, reg, log, s.Common.Pprof, health)
	return startWorker(ctx, s, log, reg, health)
}

// startWorker opens the stores (migrating the schema, as the indexer
// does) and runs a webhook worker until ctx ends, reporting to health
// (nil: none) once it runs.
func startWorker(ctx context.Context, s settings.Settings, log *slog.Logger, reg prometheus.Registerer, health *procHealth) error {
	cfg, wcfg := s.Common, s.Webhook
	if err := cfg.RequireStores(); err != nil {
		return err
	}
	if !wcfg.Enabled() {
		return errors.New("ATTESTD_WEBHOOK_SECRET_KEYS is not set: the worker cannot open webhook secrets (see docs/webhooks.md)")
	}
	st, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	rdb, err := openRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	w, err := webhook.NewWorker(webhook.WorkerOptions{Store: st, Queue: queue.New(rdb, cfg.RedisPrefix, wcfg.Partitions),
		Config: wcfg, Logger: log, Registerer: reg, Origin: deliveryOrigin(cfg)})
	if err != nil {
		return err
	}
	health.set(workerProbe(st, rdb))
	return w.Run(ctx)
}

func resealSecrets(ctx context.Context, cfg config.Config, wcfg webhook.Config, log *slog.Logger) error {
	if !wcfg.Enabled() {
		return errors.New("ATTESTD_WEBHOOK_SECRET_KEYS is not set")
	}
	st, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := webhook.Reseal(ctx, st, wcfg.Keys, log)
	if err != nil {
		return err
	}
	log.Info("re-sealed webhook secrets", "n", n, "key", wcfg.Keys.Primary())
	return nil
}

// deliveryOrigin is the origin of the links in webhook deliveries: the
// public origin (ATTESTD_PUBLIC_URL, or the loopback listener's), zero
// (paths) when there is none, as on a worker with no public URL set.
func deliveryOrigin(cfg config.Config) config.Origin {
	o, err := cfg.PublicOrigin()
	if err != nil {
		return config.Origin{}
	}
	return o
}
