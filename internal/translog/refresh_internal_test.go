package translog

import (
	"context"
	"crypto/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"golang.org/x/mod/sumdb/note"
)

// While PostgreSQL does not answer, a burst of requests makes one read,
// not one each queued behind a mutex: the others answer the failure at
// once, and the next read is tried after Refresh.
func TestCheckpointReadsWhilePostgresIsAway(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: every query fails (connection refused).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	st, err := store.Open(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2", store.Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	skey, _, err := note.GenerateKey(rand.Reader, "example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParseKey(skey)
	if err != nil {
		t.Fatal(err)
	}
	const refresh = time.Hour // no second read within this test
	s := NewServer(ServerDeps{Store: st, Config: Config{Key: key}, Refresh: refresh})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			cp, err := s.checkpoint(context.Background())
			if cp != nil {
				t.Errorf("a checkpoint from a Postgres that does not answer: %+v", cp)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Fatal("no error while Postgres does not answer")
		}
	}
	if n := s.reads.Load(); n != 1 {
		t.Fatalf("%d reads for 50 requests within one Refresh, want 1", n)
	}
	// After Refresh the next request tries again.
	s.failed.Load().at = time.Now().Add(-2 * refresh)
	if _, err := s.checkpoint(context.Background()); err == nil || s.reads.Load() != 2 {
		t.Fatalf("after Refresh: %v, %d reads, want an error and 2", err, s.reads.Load())
	}
}
