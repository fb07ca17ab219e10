package main

import (
	"context"

	"github.com/attestd/attestd/internal/node"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/tracing"
)

// runDataset cuts the daily dataset's files until it is stopped
// (node.Dataset): the backfill of every past day on its first round, then
// each day once it is over and witnessed. Any number may run; one writes.
func runDataset(ctx context.Context, args []string) error {
	fs := newFlags("dataset")
	once := fs.Bool("once", false, "run one round (the backfill and every day that can be cut now), then exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, log, err := loadSettings(settings.Dataset, nil)
	if err != nil {
		return err
	}
	stopTracing, err := tracing.Setup(ctx, "dataset", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := node.RequireSchema(ctx, s.Common, log); err != nil {
		return err
	}
	reg := node.NewRegistry()
	health := node.NewHealth(ctx, "dataset")
	if !*once {
		node.ServeInternal(ctx, s.Dataset.MetricsAddr, reg, log, s.Common.Pprof, health)
	}
	return node.Dataset(ctx, s, log, reg, health, *once)
}
