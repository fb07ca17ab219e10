package node

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// askHealth GETs /health from h and decodes the answer.
func askHealth(t *testing.T, h http.Handler) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	var body map[string]any
	testenv.Must(t, json.Unmarshal(rec.Body.Bytes(), &body), "decode %s", rec.Body.String())
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return rec.Code, body
}

// TestProcHealth: the /health of `attestd index` and `attestd worker` is
// 503 before the work starts, 200 with the role's status while it runs
// and its stores answer, 503 with the reason when one does not, and 503
// draining once the process stops.
func TestProcHealth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.Database(t), store.Options{MaxConns: 2})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	redisURL, _ := testenv.Redis(t)
	opt, err := redis.ParseURL(redisURL)
	testenv.Must(t, err, "redis url")
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	port, err := devstack.FreePort() // nothing listens there
	testenv.Must(t, err, "free port")
	deadRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1})
	t.Cleanup(func() { deadRedis.Close() })
	deadPG, err := store.Open(ctx, "postgres://postgres@127.0.0.1:"+strconv.Itoa(port)+"/x?sslmode=disable&connect_timeout=2",
		store.Options{MaxConns: 1, Lazy: true})
	testenv.Must(t, err, "open a store nobody serves")
	t.Cleanup(deadPG.Close)

	leading := false
	for _, tc := range []struct {
		name   string
		role   string
		probe  procProbe // nil: not started
		status int
		want   map[string]any
	}{
		{"worker starting", "worker", nil, 503, map[string]any{"status": "starting"}},
		{"worker consuming", "worker", workerProbe(st, rdb), 200, map[string]any{"status": "ok", "consuming": true}},
		{"worker without redis", "worker", workerProbe(st, deadRedis), 503, map[string]any{"status": "down", "consuming": false}},
		{"worker without postgres", "worker", workerProbe(deadPG, rdb), 503, map[string]any{"status": "down", "consuming": false}},
		{"indexer standing by", "index", indexerProbe(st, func() bool { return leading }), 200,
			map[string]any{"status": "ok", "indexer": "standby", "lastIndexedSlot": float64(0)}},
		{"indexer without postgres", "index", indexerProbe(deadPG, func() bool { return leading }), 503,
			map[string]any{"status": "down", "indexer": "standby"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHealth(ctx, tc.role)
			if tc.probe != nil {
				h.set(tc.probe)
			}
			code, body := askHealth(t, h)
			if code != tc.status || body["role"] != tc.role {
				t.Fatalf("%d %v, want %d role %s", code, body, tc.status, tc.role)
			}
			for k, v := range tc.want {
				if body[k] != v {
					t.Errorf("%s = %v, want %v (body %v)", k, body[k], v, body)
				}
			}
			if (code != 200) != (body["reason"] != nil) {
				t.Errorf("reason %v with status %d", body["reason"], code)
			}
		})
	}

	t.Run("indexer leading, then draining", func(t *testing.T) {
		leading = true
		pctx, stop := context.WithCancel(ctx)
		h := NewHealth(pctx, "index")
		h.set(indexerProbe(st, func() bool { return leading }))
		if code, body := askHealth(t, h); code != 200 || body["indexer"] != "leading" {
			t.Fatalf("leading: %d %v", code, body)
		}
		stop()
		if code, body := askHealth(t, h); code != 503 || body["status"] != "draining" {
			t.Fatalf("after the signal: %d %v, want 503 draining", code, body)
		}
	})
}
