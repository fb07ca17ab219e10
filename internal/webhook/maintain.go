package webhook

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// maintain runs the periodic work: reconciling pending deliveries with
// the queue, pruning the log, re-sealing secrets under the newest key,
// metrics and a progress line.
func (w *Worker) maintain(ctx context.Context) {
	if n, err := Reseal(ctx, w.st, w.cfg.Keys, w.log); err != nil {
		w.log.Warn("re-sealing webhook secrets under the newest key failed; next start tries again", "err", err)
	} else if n > 0 {
		w.log.Info("re-sealed webhook secrets under the newest key", "n", n, "key", w.cfg.Keys.Primary())
	}
	rec := time.NewTicker(w.opt.ReconcileEvery)
	defer rec.Stop()
	sample := time.NewTicker(sampleEvery)
	defer sample.Stop()
	progress := time.NewTicker(progressEvery)
	defer progress.Stop()
	prune := time.NewTimer(time.Minute)
	defer prune.Stop()
	w.reconcileOnce(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-rec.C:
			w.reconcileOnce(ctx, false)
		case <-w.reconcile:
			w.reconcileOnce(ctx, true)
		case <-sample.C:
			w.sample(ctx)
		case <-progress.C:
			w.progress()
		case <-prune.C:
			w.prune(ctx)
			prune.Reset(pruneEvery)
		}
	}
}

// lease takes a short lease named name among workers (SET NX PX); false
// when another worker holds it.
func (w *Worker) lease(ctx context.Context, name string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ok, err := w.q.Redis().SetNX(ctx, w.q.LockKey(name), w.name, d).Result()
	return err == nil && ok
}

// reconcileOnce queues again every pending delivery, unchanged for a
// while, whose job record the queue does not have: jobs lost with Redis's
// data, or by a worker that died between writing a delivery and queueing
// it. One worker at a time does it (a lease); urgent runs after a data
// loss take the lease regardless.
func (w *Worker) reconcileOnce(ctx context.Context, urgent bool) {
	if !w.lease(ctx, "reconcile", w.opt.ReconcileEvery*3/4) && !urgent {
		return
	}
	before := w.now().Add(-w.opt.ReconcileEvery)
	after, restored := "", 0
	for ctx.Err() == nil {
		ds, err := w.st.PendingDeliveryIDs(ctx, after, before, 1000)
		if err != nil {
			w.log.Warn("reconcile: listing pending deliveries failed", "err", err)
			return
		}
		if len(ds) == 0 {
			break
		}
		after = ds[len(ds)-1].ID
		byPart := map[int][]string{}
		for _, d := range ds {
			p := w.q.Partition(d.WebhookID)
			byPart[p] = append(byPart[p], d.ID)
		}
		var missing []string
		for p, ids := range byPart {
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			has, err := w.q.Has(hctx, p, ids)
			cancel()
			if err != nil {
				w.log.Warn("reconcile: checking job records failed", "err", err)
				return
			}
			for i, ok := range has {
				if !ok {
					missing = append(missing, ids[i])
				}
			}
		}
		if len(missing) == 0 {
			continue
		}
		n, err := w.restore(ctx, missing)
		restored += n
		if err != nil {
			w.log.Warn("reconcile: queueing lost deliveries failed", "err", err)
			return
		}
	}
	if restored > 0 {
		w.m.restored.Add(float64(restored))
		w.log.Warn("queued again deliveries whose job the queue had lost", "n", restored)
	}
}

// restore rebuilds the jobs of deliveries from PostgreSQL: due ones onto
// the streams, later ones into the retry sets.
func (w *Worker) restore(ctx context.Context, ids []string) (int, error) {
	djs, err := w.st.DeliveryJobs(ctx, ids)
	if err != nil {
		return 0, err
	}
	now := w.now()
	var due, later []queue.Job
	var at []time.Time
	for _, d := range djs {
		if d.Status != store.DeliveryPending {
			continue
		}
		j := queue.Job{ID: d.ID, Delivery: d.ID, Webhook: d.WebhookID, Event: d.Event.ID, Type: d.Event.Type,
			Created: d.Event.CreatedAt.UnixMilli(), Queued: now.UnixMilli(), Attempts: d.Attempts, Base: d.AttemptsBase, Body: Body(d.Event, w.opt.Origin)}
		if d.NextAttemptAt != nil && d.NextAttemptAt.After(now) {
			later, at = append(later, j), append(at, *d.NextAttemptAt)
		} else {
			due = append(due, j)
		}
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.q.Enqueue(qctx, due); err != nil {
		return 0, err
	}
	if err := w.q.Schedule(qctx, later, at); err != nil {
		return len(due), err
	}
	return len(due) + len(later), nil
}

// prune deletes what is older than the retention (one worker at a time).
func (w *Worker) prune(ctx context.Context) {
	if !w.lease(ctx, "prune", pruneEvery/2) {
		return
	}
	n, err := w.st.PruneWebhookLog(ctx, w.now().Add(-w.cfg.Retention), pruneBatch)
	if err != nil {
		w.log.Warn("pruning the webhook log failed", "err", err)
	}
	w.m.pruned.Add(float64(n))
	if n > 0 {
		w.log.Info("pruned the webhook log", "rows", n, "older_than", w.cfg.Retention.String())
	}
	if d, err := w.q.DropIdleConsumers(ctx, idleConsumer); err == nil && d > 0 {
		w.log.Info("removed consumers of stopped workers from the queue", "n", d)
	}
}

// sample updates the gauges.
func (w *Worker) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	now := w.now()
	for p := range w.q.Partitions() {
		d, err := w.q.Depth(ctx, p, now)
		if err != nil {
			continue
		}
		label := strconv.Itoa(p)
		w.m.queueDepth.WithLabelValues(label).Set(float64(d.Stream))
		w.m.retriesDue.WithLabelValues(label).Set(float64(d.Due))
		w.m.retriesWaiting.WithLabelValues(label).Set(float64(d.Scheduled))
		w.m.parked.WithLabelValues(label).Set(float64(d.Parked))
	}
	if n, err := w.q.EventBacklog(ctx); err == nil {
		w.m.eventBacklog.Set(float64(n))
	}
	if n, oldest, err := w.st.OutboxBacklog(ctx); err == nil {
		w.m.outboxBacklog.Set(float64(n))
		if oldest.IsZero() {
			w.m.outboxLag.Set(0)
		} else {
			w.m.outboxLag.Set(now.Sub(oldest).Seconds())
		}
	}
	w.m.breakersOpen.Set(float64(w.brk.openCount()))
	w.m.inflight.Set(float64(w.held.len()))
}

// progress logs what happened since the last line, when anything did.
func (w *Worker) progress() {
	c := &w.counts
	relayed, fanned, ok, failed, deferred, dropped := c.relayed.Swap(0), c.fannedOut.Swap(0), c.succeeded.Swap(0),
		c.failed.Swap(0), c.deferred.Swap(0), c.dropped.Swap(0)
	inflight, queued := w.disp.size()
	if relayed+fanned+ok+failed+deferred+dropped == 0 && inflight+queued == 0 {
		return
	}
	w.log.Info("webhook worker progress", "period", progressEvery.String(), "events_relayed", relayed, "deliveries_queued", fanned,
		"succeeded", ok, "failed", failed, "deferred", deferred, "dropped", dropped, "sending", inflight, "waiting", queued,
		"circuits_open", w.brk.openCount())
}

// Reseal seals again, under the newest key, every webhook secret sealed
// with an older one, and returns how many it re-sealed. Once it has run
// with the new key first, the old key can be removed.
func Reseal(ctx context.Context, st *store.Store, keys *keyring.Keyring, log *slog.Logger) (int, error) {
	if keys == nil {
		return 0, errors.New("no keys")
	}
	n, after := 0, ""
	for ctx.Err() == nil {
		batch, err := st.SecretsNotSealedWith(ctx, keys.Primary(), after, 100)
		if err != nil {
			return n, err
		}
		if len(batch) == 0 {
			return n, nil
		}
		for _, s := range batch {
			after = s.WebhookID
			r, err := resealOne(keys, s)
			if err != nil {
				log.Error("cannot open a webhook secret to re-seal it; is its key still listed?", "webhook", s.WebhookID,
					"key", s.KeyID, "err", err)
				continue
			}
			ok, err := st.ResealSecret(ctx, s, r)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
	return n, ctx.Err()
}

// resealOne opens every sealed value of one webhook and seals it again
// under the newest key.
func resealOne(keys *keyring.Keyring, s store.SealedSecret) (store.SealedSecret, error) {
	r := store.SealedSecret{WebhookID: s.WebhookID}
	again := func(sealed, aad []byte) ([]byte, error) {
		if sealed == nil {
			return nil, nil
		}
		plain, err := keys.Open(sealed, s.KeyID, aad)
		if err != nil {
			return nil, err
		}
		out, keyID, err := keys.Seal(plain, aad)
		r.KeyID = keyID
		return out, err
	}
	var err error
	if r.Sealed, err = again(s.Sealed, []byte(s.WebhookID)); err != nil {
		return r, err
	}
	if r.Previous, err = again(s.Previous, []byte(s.WebhookID)); err != nil {
		return r, err
	}
	if r.Ed25519, err = again(s.Ed25519, Ed25519AAD(s.WebhookID)); err != nil {
		return r, err
	}
	return r, nil
}

// Ed25519AAD is the additional data a webhook's Ed25519 key is sealed
// with: it binds the sealed key to its webhook, apart from its secrets
// (one cannot be put in place of the other). The management API seals and
// opens the key with it too.
func Ed25519AAD(webhookID string) []byte { return []byte(webhookID + "/ed25519") }
