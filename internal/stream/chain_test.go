package stream

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestIndexerToStream: end to end, the chain simulator's attestations
// reach a stream through the real indexer: each one as an attestation
// event (at confirmed) and, once its block is final, a commitment event,
// unless the indexer stored it finalized already.
func TestIndexerToStream(t *testing.T) {
	x := newHarness(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	chain, err := devnet.Start(ctx, devnet.Config{SlotInterval: 20 * time.Millisecond, FinalityDepth: 8, Logger: apptest.Logger()})
	testenv.Must(t, err, "start devnet")
	t.Cleanup(chain.Close)
	ix, err := indexer.New(indexer.Config{RPCURL: chain.RPCURL(), WSURL: chain.WSURL(), ProgramID: chain.ProgramID(),
		PollInterval: time.Second, FallbackPoll: 150 * time.Millisecond, FinalityInterval: 150 * time.Millisecond,
		LockRetry: 200 * time.Millisecond, Logger: apptest.Logger()}, x.env.Store)
	testenv.Must(t, err, "indexer")
	ictx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = ix.Run(ictx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	r, resp := x.open("", nil)
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	const n = 12
	if _, err := chain.Generate(ctx, 2, n, 4); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}      // pda: an attestation event came
	finalized := map[string]bool{} // pda: known finalized
	for len(seen) < n || len(finalized) < n {
		e := r.mustNext(t)
		var a attestation.Attestation
		if err := json.Unmarshal([]byte(e.Data), &a); err != nil {
			t.Fatalf("event %+v: %v", e, err)
		}
		switch e.Event {
		case "attestation":
			if seen[a.PDA] {
				t.Fatalf("attestation %s twice", a.PDA)
			}
			if e.ID != cursorOf(a) {
				t.Fatalf("id %s, want the list cursor %s", e.ID, cursorOf(a))
			}
			seen[a.PDA] = true
		case "commitment":
			if !seen[a.PDA] || a.Commitment != attestation.Finalized {
				t.Fatalf("commitment event %+v before its attestation, or not finalized", e)
			}
		default:
			t.Fatalf("unexpected event %+v", e)
		}
		if a.Commitment == attestation.Finalized {
			finalized[a.PDA] = true
		}
	}
}
