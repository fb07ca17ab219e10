package node

import (
	"context"
	"log/slog"

	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/settings"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/prometheus/client_golang/prometheus"
)

// Index opens the store (and, when Redis is configured, the cache whose
// epoch the write path bumps so API nodes see new rows) and runs the
// indexer, the payments reconciler and the log's appender until ctx ends,
// reporting to health (nil: none) once the indexer runs. The schema is
// the caller's to check (RequireSchema) or apply (migrate): Index
// changes none.
func Index(ctx context.Context, s settings.Settings, log *slog.Logger, reg prometheus.Registerer, health *Health) error {
	cfg, icfg := s.Common, s.Indexer
	icfg.Logger, icfg.Registerer = log, reg
	st, err := OpenStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.RedisURL != "" {
		rdb, err := OpenRedis(ctx, cfg)
		if err != nil {
			return err
		}
		defer rdb.Close()
		closeCache, err := OpenWriterCache(ctx, cfg, s.Purge, rdb, st, reg, log)
		if err != nil {
			return err
		}
		defer closeCache()
	} else {
		log.Warn("REDIS_URL not set: API caches will not learn of newly indexed rows until they expire")
	}
	ix, err := indexer.New(icfg, st)
	if err != nil {
		return err
	}
	if err := startReconciler(ctx, st, s, log, reg); err != nil {
		return err
	}
	if err := startLogAppender(ctx, st, s.Log, log, reg); err != nil {
		return err
	}
	watchBackups(ctx, st, reg, log)
	log.Info("indexer starting", "rpc", icfg.RPCURL, "ws", icfg.WSURL, "program", icfg.ProgramID.String())
	health.set(indexerProbe(st, ix.IsLeader))
	return ix.Run(ctx)
}

// startReconciler runs the payments reconciler beside the indexer (which
// always runs and already talks to the chain): open payments are settled
// or released against ATTESTD_X402_RPC_URL (default: the indexer's RPC).
func startReconciler(ctx context.Context, st *store.Store, s settings.Settings, log *slog.Logger, reg prometheus.Registerer) error {
	interval, rpcURL := s.ReconcileInterval, s.PaymentsRPC
	if interval == 0 {
		log.Info("payments reconciler off (ATTESTD_X402_RECONCILE_INTERVAL=0)")
		return nil
	}
	if s.PaymentsRecoverErr != nil {
		log.Error("payments recovery off: the settlements a restore lost will not be recovered from the chain", "err", s.PaymentsRecoverErr)
	}
	r, err := verifier.NewReconciler(verifier.ReconcilerOptions{Ledger: st, RPCURL: rpcURL, Interval: interval, Logger: log,
		Recover: s.PaymentsRecover, Registerer: reg})
	if err != nil {
		return err
	}
	log.Info("payments reconciler on", "rpc", rpcURL, "interval", interval.String(), "recovers_settlements", !s.PaymentsRecover.PayTo.IsZero())
	go func() { _ = r.Run(ctx) }()
	return nil
}

// startLogAppender runs the transparency log's appender beside the
// indexer when ATTESTD_LOG_KEY holds the log's private key: one appender
// at a time fleet-wide, by its own advisory lock (see docs/log.md).
func startLogAppender(ctx context.Context, st *store.Store, lcfg translog.Config, log *slog.Logger, reg prometheus.Registerer) error {
	if !lcfg.Enabled() {
		log.Info("transparency log appender off (set ATTESTD_LOG_KEY to the log's private key)")
		return nil
	}
	if !lcfg.Key.CanSign() {
		log.Warn("transparency log appender off: ATTESTD_LOG_KEY is a verifier key; the appender needs the private key")
		return nil
	}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Config: lcfg, Logger: log, Registry: reg})
	if err != nil {
		return err
	}
	log.Info("transparency log appender on", "origin", lcfg.Key.Name, "checkpoint_interval", lcfg.CheckpointInterval.String(),
		"batch", lcfg.Batch)
	go func() { _ = a.Run(ctx) }()
	return nil
}
