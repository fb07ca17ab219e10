package node

import (
	"context"
	"errors"
	"log/slog"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/prometheus/client_golang/prometheus"
)

// Worker opens the stores and runs a webhook worker (the outbox relay,
// the fan-out and the senders) until ctx ends, reporting to health (nil:
// none) once it runs. Like Index, it changes no schema.
func Worker(ctx context.Context, s settings.Settings, log *slog.Logger, reg prometheus.Registerer, health *Health) error {
	cfg, wcfg := s.Common, s.Webhook
	if err := cfg.RequireStores(); err != nil {
		return err
	}
	if !wcfg.Enabled() {
		return errors.New("ATTESTD_WEBHOOK_SECRET_KEYS is not set: the worker cannot open webhook secrets (see docs/webhooks.md)")
	}
	st, err := OpenStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	rdb, err := OpenRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	w, err := webhook.NewWorker(webhook.WorkerDeps{Store: st, Queue: queue.New(rdb, cfg.RedisPrefix, wcfg.Partitions),
		Config: wcfg, Logger: log, Registerer: reg, Origin: deliveryOrigin(cfg)})
	if err != nil {
		return err
	}
	health.set(workerProbe(st, rdb))
	return w.Run(ctx)
}

// Reseal re-seals every webhook secret under the first key of
// ATTESTD_WEBHOOK_SECRET_KEYS (after a key rotation).
func Reseal(ctx context.Context, s settings.Settings, log *slog.Logger) error {
	cfg, wcfg := s.Common, s.Webhook
	if !wcfg.Enabled() {
		return errors.New("ATTESTD_WEBHOOK_SECRET_KEYS is not set")
	}
	st, err := OpenStore(ctx, cfg, false)
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
