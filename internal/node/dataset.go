package node

import (
	"context"
	"log/slog"

	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/settings"
	"github.com/prometheus/client_golang/prometheus"
)

// Dataset runs the daily dataset's producer (attestd dataset) until ctx
// ends: one producer at a time fleet-wide by its own lock, reading the
// log from PostgreSQL and writing files to the configured bucket.
// once: a single round (the backfill and every day that can be cut),
// under the lock, then return. The schema is the caller's to check.
func Dataset(ctx context.Context, s settings.Settings, log *slog.Logger, reg prometheus.Registerer, health *Health, once bool) error {
	if !s.Dataset.Enabled() {
		return dataset.ErrOff
	}
	st, err := OpenStore(ctx, s.Common, false)
	if err != nil {
		return err
	}
	defer st.Close()
	bucket, err := s.Dataset.OpenBucket(ctx)
	if err != nil {
		return err
	}
	defer bucket.Close()
	p, err := dataset.NewProducer(dataset.ProducerDeps{Store: st, Bucket: bucket, Config: s.Dataset, Log: s.Log, Logger: log, Registerer: reg})
	if err != nil {
		return err
	}
	health.set(func(ctx context.Context) (map[string]any, string) {
		f := map[string]any{"producer": "standby"}
		if p.IsLeader() {
			f["producer"] = "leading"
		}
		if err := st.Ping(ctx); err != nil {
			return f, "postgres: " + err.Error()
		}
		return f, ""
	})
	log.Info("dataset producer starting", "prefix", s.Dataset.Prefix, "interval", s.Dataset.Interval.String(), "origin", s.Log.Origin(),
		"witnesses", len(s.Log.Witnesses), "quorum", s.Log.Quorum)
	if once {
		return p.Once(ctx)
	}
	return p.Run(ctx)
}
