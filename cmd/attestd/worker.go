package main

import (
	"context"

	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
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
	if err := node.RequireSchema(ctx, s.Common, log); err != nil {
		return err
	}
	if *reseal {
		return node.Reseal(ctx, s, log)
	}
	reg := node.NewRegistry()
	health := node.NewHealth(ctx, "worker")
	node.ServeInternal(ctx, s.Webhook.MetricsAddr, reg, log, s.Common.Pprof, health)
	return node.Worker(ctx, s, log, reg, health)
}
