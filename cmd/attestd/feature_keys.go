package main

import (
	"context"
	"fmt"
	"os"

	"github.com/attestd/attestd/apikey"
	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/premium"
	"github.com/gofiber/fiber/v2"
)

// premiumOnMissingKey is the pay-per-request seam of the premium routes.
// A payment feature (x402) sets it from its own init; the handler it
// returns answers premium requests that carry no x-api-key header (402 with
// payment instructions, or verify a payment and c.Next()). Nil: such
// requests get 401 like any request without a valid key.
var premiumOnMissingKey func(ctx context.Context, n *node) (fiber.Handler, error)

func init() {
	registerFeature(feature{name: "keys", routes: keysRoutes})
}

// keysRoutes adds API keys (POST/GET /keys, DELETE /keys/:prefix) and the
// premium routes behind them.
func keysRoutes(ctx context.Context, n *node, api *app.API) error {
	kopt, err := apikey.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	kopt.Store, kopt.Redis, kopt.Logger, kopt.Registerer = n.store, n.redis, n.log, n.reg
	kopt.Channel = n.cfg.RedisPrefix + "apikey:invalidate"
	svc, err := apikey.New(ctx, kopt)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, svc.Close)
	svc.Routes(api)

	popt, err := premium.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	popt.Store, popt.Cache, popt.Logger, popt.Now = n.store, n.deps.Cache, n.log, n.deps.Now
	h, err := premium.New(popt)
	if err != nil {
		return err
	}
	var onMissing fiber.Handler
	if premiumOnMissingKey != nil {
		if onMissing, err = premiumOnMissingKey(ctx, n); err != nil {
			return fmt.Errorf("premium payments: %w", err)
		}
	}
	h.Routes(api, svc.Require(apikey.RequireOptions{OnMissingKey: onMissing}))
	n.log.Info("api keys and premium routes enabled", "key_cache_ttl", svc.CacheTTL().String(),
		"pay_per_request", onMissing != nil, "report_rules", fmt.Sprintf("%+v", h.Rules()))
	return nil
}
