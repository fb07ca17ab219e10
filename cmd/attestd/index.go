package main

import (
	"context"

	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
)

// runIndex indexes the chain until it is stopped (node.Index); any number
// of index processes may run, one of them writing.
func runIndex(ctx context.Context, args []string) error {
	fs := newFlags("index")
	startOver := fs.Bool("start-over", false, "index the RPC node's chain even though this database was indexed from another one "+
		"(another genesis hash, or a slot behind the checkpoint): forget the checkpoint and start from the chain's first transaction; indexed rows stay")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, log, err := loadSettings(settings.Index, nil)
	if err != nil {
		return err
	}
	// Tracing (OTLP/HTTP): on when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	stopTracing, err := tracing.Setup(ctx, "index", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := node.RequireSchema(ctx, s.Common, log); err != nil {
		return err
	}
	s.Indexer.StartOver = s.Indexer.StartOver || *startOver
	reg := node.NewRegistry()
	health := node.NewHealth(ctx, "index")
	node.ServeInternal(ctx, s.Indexer.MetricsAddr, reg, log, s.Common.Pprof, health)
	return node.Index(ctx, s, log, reg, health)
}
