package main

import (
	"context"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// addFeatures wires the optional parts of a serving node (rate limiting,
// keys, payments, ...) into deps. Each feature adds itself here.
func addFeatures(ctx context.Context, cfg config.Config, deps *app.Deps, rdb redis.UniversalClient, reg prometheus.Registerer) error {
	return nil
}
