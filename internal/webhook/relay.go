package webhook

import (
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"context"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/webhook/queue"
)

// relay publishes outbox rows to the event stream, oldest first, woken by
// the write path's notification (or its poll interval). Relays of several
// workers share the work: each locks the rows it publishes.
func (w *Worker) relay(ctx context.Context) {
	wake := make(chan struct{}, 1)
	go w.st.ListenOutbox(ctx, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	var wait time.Duration
	for ctx.Err() == nil {
		n, err := w.publish(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = backoff(wait, 5*time.Second)
			w.log.Warn("relay: publishing outbox events failed; retrying", "err", err, "retry_in", wait.String())
			pause.For(ctx, wait)
			continue
		}
		wait = 0
		if n > 0 {
			w.m.relayed.Add(float64(n))
			w.counts.relayed.Add(int64(n))
			w.log.Debug("relay: published outbox events", "n", n)
		}
		if n < relayBatch { // wait for a commit's notification, or poll
			t := time.NewTimer(w.cfg.PollInterval)
			select {
			case <-ctx.Done():
			case <-wake:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// publish puts the next outbox rows on the event stream, counted as live
// work while it runs (recoveries wait for it).
func (w *Worker) publish(ctx context.Context) (int, error) {
	w.live.begin(1)
	defer w.live.end(1)
	return w.st.PublishOutbox(ctx, relayBatch, republishAfter, func(evs []store.OutboxEvent) error {
		msgs := make([]queue.Event, len(evs))
		for i, e := range evs {
			msgs[i] = queue.Event{ID: e.ID, Type: e.Type, Created: e.CreatedAt.UnixMilli(), Body: Body(e, w.opt.Origin), Trace: e.Trace}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return w.q.Publish(pctx, msgs)
	})
}

// fanOut reads events and makes their deliveries: the rows in PostgreSQL
// (and the event marked dispatched) first, then the jobs, then the
// acknowledgement. A crash in between leaves the event unacknowledged: it
// is taken over and fanned out again, which queues the deliveries not
// attempted yet (a job may then be sent twice, never lost).
func (w *Worker) fanOut(ctx context.Context) {
	consumer := w.name
	lastClaim := time.Now()
	var wait time.Duration
	for ctx.Err() == nil {
		var msgs []queue.EventMsg
		var err error
		if time.Since(lastClaim) > w.cfg.ClaimIdle/2 {
			lastClaim = time.Now()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			msgs, err = w.q.ClaimEvents(cctx, consumer, w.cfg.ClaimIdle, fanOutBatch)
			cancel()
			if len(msgs) > 0 {
				w.log.Info("fan-out: took over events another worker left unfinished", "n", len(msgs))
			}
		}
		if err == nil && len(msgs) == 0 {
			msgs, err = w.q.ReadEvents(ctx, consumer, fanOutBatch, readBlock)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if queue.IsNoGroup(err) {
				w.recoverLostData(ctx, "the event stream's consumer group is gone")
				continue
			}
			wait = backoff(wait, 5*time.Second)
			w.log.Warn("fan-out: reading events failed; retrying", "err", err, "retry_in", wait.String())
			pause.For(ctx, wait)
			continue
		}
		wait = 0
		if len(msgs) > 0 {
			wait = w.fanOutAll(ctx, msgs)
		}
	}
}

// fanOutAll fans msgs out until it succeeds or ctx ends, counted as live
// work while it runs (recoveries wait for it); it returns the last wait.
func (w *Worker) fanOutAll(ctx context.Context, msgs []queue.EventMsg) time.Duration {
	w.live.begin(1)
	defer w.live.end(1)
	var wait time.Duration
	for ctx.Err() == nil {
		if err := w.fanOutBatch(ctx, msgs); err != nil {
			wait = backoff(wait, 5*time.Second)
			w.log.Warn("fan-out: making deliveries failed; retrying", "err", err, "events", len(msgs), "retry_in", wait.String())
			pause.For(ctx, wait)
			continue
		}
		return 0
	}
	return wait
}

func (w *Worker) fanOutBatch(ctx context.Context, msgs []queue.EventMsg) (err error) {
	if tracing.Enabled() {
		// A trace per batch: its deliveries (queued here, carrying this
		// span's traceparent) are its children.
		var span trace.Span
		ctx, span = fanOutSpan(ctx, msgs)
		defer func() { tracing.End(span, err) }()
	}
	byID := make(map[int64]queue.Event, len(msgs))
	ids := make([]int64, 0, len(msgs))
	streamIDs := make([]string, 0, len(msgs))
	for _, m := range msgs {
		streamIDs = append(streamIDs, m.StreamID)
		if m.Err != nil {
			w.log.Warn("fan-out: dropping a malformed event message", "err", m.Err)
			continue
		}
		if _, dup := byID[m.Event.ID]; !dup {
			ids = append(ids, m.Event.ID)
		}
		byID[m.Event.ID] = m.Event
	}
	ds, err := w.st.FanOut(ctx, ids)
	if err != nil {
		return err
	}
	now := w.now().UnixMilli()
	jobs := make([]queue.Job, len(ds))
	for i, d := range ds {
		e := byID[d.OutboxID]
		jobs[i] = queue.Job{ID: d.ID, Delivery: d.ID, Webhook: d.WebhookID, Event: e.ID, Type: e.Type, Created: e.Created,
			Queued: now, Body: e.Body, Origin: e.Trace}
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.q.Enqueue(qctx, jobs); err != nil {
		return err
	}
	if err := w.q.AckEvents(qctx, streamIDs); err != nil {
		return err
	}
	w.m.fannedOut.Add(float64(len(jobs)))
	w.counts.fannedOut.Add(int64(len(jobs)))
	if len(jobs) > 0 {
		w.log.Debug("fan-out: queued deliveries", "events", len(ids), "deliveries", len(jobs))
	}
	return nil
}

// maxFanOutLinks bounds the links of one fan-out span (the SDK's own
// limit is 128): a batch after a backlog may hold events of many writers.
const maxFanOutLinks = 32

// fanOutSpan starts the "webhook fan-out" span of a batch, linked to the
// spans that wrote its events to the outbox (their traceparents: the
// indexer's batch of a round, the request of a test event), each once.
// Links, not a parent: a batch merges events of many rounds and a span has
// one parent, so parenting would file the batch and every delivery under
// one round's trace and lose the others, and would make a round's trace
// run on for as long as its deliveries are retried; a link per writer
// keeps each round's trace its own and still leads from the batch to each.
func fanOutSpan(ctx context.Context, msgs []queue.EventMsg) (context.Context, trace.Span) {
	var links []trace.Link
	seen := make(map[string]bool)
	for _, m := range msgs {
		tp := m.Event.Trace
		if m.Err != nil || tp == "" || seen[tp] || len(links) == maxFanOutLinks {
			continue
		}
		seen[tp] = true
		if l, ok := tracing.Link(tp); ok {
			links = append(links, l)
		}
	}
	return tracing.Tracer().Start(ctx, "webhook fan-out", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int("attestd.webhook.events", len(msgs))), trace.WithLinks(links...))
}
