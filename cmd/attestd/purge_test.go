package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// TestPurgeHookCalledByTheWriterOnly runs the binary as a fleet would,
// every process with ATTESTD_PURGE_URL set: two serving nodes and a writer
// (seed). Only the writer calls the purge URL, once per call for a newer
// epoch than the last (never the same epoch twice, as one call per node
// would), and its last call, made before it exits, is for the epoch the
// index ends at.
func TestPurgeHookCalledByTheWriterOnly(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	redisURL, prefix := testenv.Redis(t)
	var mu sync.Mutex
	var epochs []uint64
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := strconv.ParseUint(r.Header.Get("Attestd-Epoch"), 10, 64)
		if err != nil || r.Header.Get("Surrogate-Key") != "lists stats agents confirmed" || r.Header.Get("X-Purge-Token") != "t0k" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		epochs = append(epochs, e)
		mu.Unlock()
	}))
	defer cdn.Close()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"DATABASE_URL=" + testenv.Database(t), "REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0",
		"ATTESTD_PURGE_URL=" + cdn.URL + "/purge", "ATTESTD_PURGE_HEADER=X-Purge-Token: t0k", "ATTESTD_PURGE_MIN_INTERVAL=0s",
	}
	runCmd(t, bin, env, "migrate")
	for range 2 {
		base := serveNode(t, bin, env)
		if code := get(t, base+"/stats", "203.0.113.1", "", nil); code != http.StatusOK {
			t.Fatalf("stats: %d", code)
		}
	}
	runCmd(t, bin, env, "seed", "--agents", "3", "--attestations", "2000")
	rdb := redis.NewClient(mustParseRedis(t, redisURL))
	defer rdb.Close()
	final, err := rdb.Get(context.Background(), prefix+"epoch").Uint64()
	testenv.Must(t, err, "read epoch")
	mu.Lock()
	got := append([]uint64(nil), epochs...)
	mu.Unlock()
	if len(got) == 0 || got[len(got)-1] != final {
		t.Fatalf("purge calls for epochs %v; the index ended at %d", got, final)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("epoch %d purged after %d: %v", got[i], got[i-1], got)
		}
	}
	t.Logf("%d purge calls, epochs %d..%d", len(got), got[0], final)
}

func mustParseRedis(t *testing.T, url string) *redis.Options {
	o, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse redis url")
	return o
}
