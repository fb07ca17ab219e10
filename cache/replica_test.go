package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestNoStaleValueUnderANewEpoch is the epoch race with read replicas:
// a write commits on the primary and bumps the epoch; nodes hear the new
// epoch and reload, while the replica has not replayed the commit (replay
// paused). Nothing older than the commit may be cached under the new
// epoch: a load reads the replica only once it has replayed the epoch's
// WAL position, and otherwise (after a bounded wait) the primary.
func TestNoStaleValueUnderANewEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rp := testenv.OwnReplicated(t)
	// No lag bound to speak of: only the WAL-position guard keeps the
	// paused replica from answering.
	st, err := store.Open(ctx, rp.PrimaryURL, store.Options{MaxConns: 8, Replicas: store.ReplicaOptions{
		URLs: []string{rp.ReplicaURL}, MaxLag: time.Hour, Wait: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond}})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	url, prefix := testenv.Redis(t)
	writer := newCache(t, url, prefix, Options{SkipSubscriber: true}) // the indexer's
	st.SetNotifier(writer)
	node1 := newCache(t, url, prefix, Options{})
	node2 := newCache(t, url, prefix, Options{})

	total := func(c *Cache) int64 {
		t.Helper()
		b, _, err := c.Get(ctx, "stats", func(ctx context.Context) ([]byte, bool, error) {
			s, err := st.Stats(ctx, time.Now())
			if err != nil {
				return nil, false, err
			}
			b, err := json.Marshal(s)
			return b, false, err
		})
		testenv.Must(t, err, "stats")
		var s store.Stats
		testenv.Must(t, json.Unmarshal(b, &s), "decode")
		return s.Attestations
	}
	write := func(i int) uint64 {
		t.Helper()
		now := time.Now().UTC().Truncate(time.Second)
		tx := fmt.Sprintf("tx%d", i)
		r := store.AttestationRecord{Event: store.Event{TxSignature: tx, Slot: uint64(100 + i), Commitment: attestation.Finalized},
			PDA: "pda-" + tx, AgentPDA: "agentA", ActionType: attestation.ToolCall, Timestamp: now}
		_, err := st.Apply(ctx, &store.Batch{Attestations: []store.AttestationRecord{r}})
		testenv.Must(t, err, "apply %d", i)
		e := writer.Epoch()
		for _, n := range []*Cache{node1, node2} {
			testenv.WaitFor(t, "node at the new epoch", 30*time.Second, func() bool { return n.Epoch() >= e })
		}
		return e
	}
	replayed := func(pos uint64) bool { return st.Replicas()[0].ReplayLSN >= pos && st.Replicas()[0].Status == "ok" }

	e := write(1)
	testenv.WaitFor(t, "replay of the first write", 30*time.Second, func() bool { return replayed(e) })
	if n := total(node1); n != 1 {
		t.Fatalf("node 1 sees %d attestations, want 1", n)
	}
	rp.PauseReplay(t)
	for i := 2; i <= 4; i++ {
		e = write(i)
		if replayed(e) {
			t.Fatal("the paused replica replayed the write: the test proves nothing")
		}
		// Both nodes reload under the new epoch while the replica lacks
		// the commit; node 2 may take node 1's value from Redis.
		for _, n := range []*Cache{node1, node2} {
			if got := total(n); got != int64(i) {
				t.Fatalf("write %d: a node caches %d attestations under epoch %d: stale data from the replica", i, got, e)
			}
		}
	}
	rp.ResumeReplay(t)
	e = write(5)
	testenv.WaitFor(t, "replay after resume", 30*time.Second, func() bool { return replayed(e) })
	if got := total(node2); got != 5 {
		t.Fatalf("after resume: %d attestations, want 5", got)
	}
}
