package main

import (
	"context"
	"log/slog"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/config"
	"github.com/attestd/attestd/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// node is what a serving process has built before its optional features
// are added.
type node struct {
	cfg   config.Config
	log   *slog.Logger
	store *store.Store
	redis redis.UniversalClient
	reg   prometheus.Registerer
	deps  *app.Deps
	// closers run at shutdown, last added first.
	closers []func()
}

// feature adds an optional part of a serving node (rate limiting, API keys
// and premium routes, payments, ...). configure runs before the app is
// built (middleware, health); routes runs after (its routes). Features
// register themselves in init, one file each: feature_<name>.go.
type feature struct {
	name      string
	configure func(ctx context.Context, n *node) error
	routes    func(ctx context.Context, n *node, api *app.API) error
}

var features []feature

func registerFeature(f feature) { features = append(features, f) }
