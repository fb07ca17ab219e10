package node

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/store"
	"github.com/redis/go-redis/v9"
)

// procProbe checks a running index or worker process: the fields its
// /health shows, and a problem ("" when it works).
type procProbe func(ctx context.Context) (fields map[string]any, problem string)

// Health answers GET /health on the internal listener of `attestd
// index` and `attestd worker`: 200 {"status":"ok",...} while the process
// works, 503 while it starts, cannot reach its stores, or stops.
type Health struct {
	role     string
	stopping <-chan struct{}
	probe    atomic.Pointer[procProbe]
}

// NewHealth is the /health of a process of role, answering 503 starting
// until the process sets its probe and 503 draining once ctx ends.
func NewHealth(ctx context.Context, role string) *Health {
	return &Health{role: role, stopping: ctx.Done()}
}

// set installs the probe once the process works (nil h: nothing to do).
func (h *Health) set(p procProbe) {
	if h != nil {
		h.probe.Store(&p)
	}
}

// ServeHTTP answers GET /health.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body := map[string]any{"role": h.role}
	status := http.StatusOK
	select {
	case <-h.stopping:
		body["status"], body["reason"], status = "draining", "the process is shutting down", http.StatusServiceUnavailable
	default:
		p := h.probe.Load()
		if p == nil {
			body["status"], body["reason"], status = "starting", "the process has not started its work yet", http.StatusServiceUnavailable
			break
		}
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		fields, problem := (*p)(ctx)
		for k, v := range fields {
			body[k] = v
		}
		body["status"] = "ok"
		if problem != "" {
			body["status"], body["reason"], status = "down", problem, http.StatusServiceUnavailable
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// indexerProbe: PostgreSQL answers; the indexer leads (writes) or stands
// by (another holds the writer lock); the last checkpoint.
func indexerProbe(st *store.Store, leading func() bool) procProbe {
	return func(ctx context.Context) (map[string]any, string) {
		f := map[string]any{"indexer": "standby"}
		if leading() {
			f["indexer"] = "leading"
		}
		if err := st.Ping(ctx); err != nil {
			return f, "postgres: " + err.Error()
		}
		cp, ok, err := st.Checkpoint(ctx, app.IndexerCheckpoint)
		if err != nil {
			return f, "postgres: the checkpoint cannot be read: " + err.Error()
		}
		f["lastIndexedSlot"], f["lastIndexedAt"] = uint64(0), nil
		if ok {
			f["lastIndexedSlot"] = cp.Slot
			if !cp.UpdatedAt.IsZero() {
				f["lastIndexedAt"] = cp.UpdatedAt.UTC().Format(time.RFC3339Nano)
			}
		}
		return f, ""
	}
}

// workerProbe: the worker consumes its queues while PostgreSQL (the
// outbox) and Redis (the queues) answer.
func workerProbe(st *store.Store, rdb redis.UniversalClient) procProbe {
	return func(ctx context.Context) (map[string]any, string) {
		f := map[string]any{"consuming": false}
		if err := st.Ping(ctx); err != nil {
			return f, "postgres: " + err.Error()
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			return f, "redis: " + err.Error()
		}
		f["consuming"] = true
		return f, ""
	}
}
