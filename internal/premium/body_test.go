package premium_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestCompressedBodiesAreBounded: a double-gzip body of a few hundred
// bytes once expanded to a gigabyte inside a node (Fiber decodes every
// layer, unbounded). Stacked codings are
// 415, a single layer that expands past the route's limit is 413, and
// four at once cost the node next to nothing; POST /keys likewise.
func TestCompressedBodiesAreBounded(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 10})
	pn := startNode(t, env, premium.Config{})
	double := testenv.Gzip(testenv.Gzip(make([]byte, 256<<20))) // 256 MiB of zeros in ~1.2 KB
	single := testenv.Gzip(make([]byte, 64<<20))                // 64 MiB in ~64 KB
	auth := func(enc string) map[string]string {
		return map[string]string{"x-api-key": pn.key, "Content-Type": "application/json", "Content-Encoding": enc}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range []struct {
				path, enc string
				body      []byte
				status    int
			}{
				{"/premium/bulk-verify", "gzip, gzip", double, 415},
				{"/premium/bulk-verify", "gzip", single, 413},
				{"/keys", "gzip, gzip", double, 415},
				{"/keys", "gzip", testenv.Gzip(make([]byte, 1<<20)), 413},
				{"/premium/bulk-verify", "br", []byte(`{"ids":[]}`), 415},
			} {
				if r := pn.raw(t, "POST", tc.path, tc.body, auth(tc.enc)); r.Status != tc.status {
					t.Errorf("%s with %s: %d %s, want %d", tc.path, tc.enc, r.Status, r.Body, tc.status)
				}
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("20 hostile bodies made the node allocate %d MB", alloc>>20)
	}
	// A well-formed compressed request still works.
	ids := pdas(t, env, "LIMIT 3")
	if r := pn.raw(t, "POST", "/premium/bulk-verify", testenv.Gzip(idsBody(ids)), auth("gzip")); r.Status != 200 {
		t.Fatalf("gzip bulk verify: %d %s", r.Status, r.Body)
	}
}
