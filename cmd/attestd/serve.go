package main

import (
	"context"

	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
)

// runServe runs one API node from the process environment (the node's
// wiring, every feature in order, is node.Serve).
func runServe(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, log, err := loadSettings(settings.Serve, nil)
	if err != nil {
		return err
	}
	// Tracing (OTLP/HTTP): on when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	stopTracing, err := tracing.Setup(ctx, "serve", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := node.RequireSchema(ctx, s.Common, log); err != nil {
		return err
	}
	return node.Serve(ctx, s, log, node.ServeOptions{SkipDrain: secondSignal(ctx)})
}
