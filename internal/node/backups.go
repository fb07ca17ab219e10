package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// backupWatchEvery is how often the index role reads the newest backup.
const backupWatchEvery = time.Minute

// backupAge exports the newest backup's age (attestd backup records each
// one): attestd_backup_age_seconds, measured at scrape time, and nothing
// while no backup was ever recorded (no alert on a deployment that backs
// up by other means; docs/operations.md, Backups).
type backupAge struct {
	age, size *prometheus.Desc
	mu        sync.Mutex
	newest    store.Backup
	known     bool
}

func newBackupAge() *backupAge {
	return &backupAge{
		age: prometheus.NewDesc("attestd_backup_age_seconds",
			"seconds since the newest backup attestd backup recorded finished (absent: none recorded)", nil, nil),
		size: prometheus.NewDesc("attestd_backup_bytes", "the newest recorded backup's size", nil, nil),
	}
}

func (b *backupAge) Describe(ch chan<- *prometheus.Desc) { ch <- b.age; ch <- b.size }

func (b *backupAge) Collect(ch chan<- prometheus.Metric) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.known {
		return
	}
	ch <- prometheus.MustNewConstMetric(b.age, prometheus.GaugeValue, time.Since(b.newest.FinishedAt).Seconds())
	ch <- prometheus.MustNewConstMetric(b.size, prometheus.GaugeValue, float64(b.newest.Bytes))
}

// watch reads the newest backup now and every backupWatchEvery until ctx
// ends.
func (b *backupAge) watch(ctx context.Context, st *store.Store, log *slog.Logger) {
	t := time.NewTicker(backupWatchEvery)
	defer t.Stop()
	for {
		nb, ok, err := st.NewestBackup(ctx)
		if err != nil && ctx.Err() == nil {
			log.Debug("cannot read the newest backup", "err", err)
		} else if err == nil {
			b.mu.Lock()
			b.newest, b.known = nb, ok
			b.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchBackups exports the newest backup's age from the index role.
func watchBackups(ctx context.Context, st *store.Store, reg prometheus.Registerer, log *slog.Logger) {
	if reg == nil {
		return
	}
	b := newBackupAge()
	if err := reg.Register(b); err != nil {
		log.Warn("backup age metric not registered", "err", err)
		return
	}
	go b.watch(ctx, st, log)
}
