package main

import (
	"context"
	"os"

	"github.com/attestd/attestd/ratelimit"
)

func init() {
	registerFeature(feature{name: "ratelimit", configure: rateLimitConfigure})
}

// rateLimitConfigure puts the per-IP sliding-window limiter in front of
// every route of the public listener (the metrics listener is separate and
// not limited).
func rateLimitConfigure(ctx context.Context, n *node) error {
	cfg, err := ratelimit.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if cfg.Limit == 0 {
		n.log.Warn("rate limiting disabled (ATTESTD_RATE_LIMIT=0)")
		return nil
	}
	l, err := ratelimit.New(n.redis, cfg, n.reg, n.log)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, l.Close)
	n.deps.Middleware = append(n.deps.Middleware, l.Middleware())
	n.deps.Degraded = append(n.deps.Degraded, l.Degraded)
	n.log.Info("rate limiting", "limit", cfg.Limit, "window", cfg.Window.String(), "resolver", l.Resolver().String())
	return nil
}
