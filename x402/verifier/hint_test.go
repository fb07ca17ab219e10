package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// After an idle period (a hint older than 30 s) the first 402 still
// carries a fresh recentBlockhash hint: it is refreshed on demand.
func TestHintAfterIdle(t *testing.T) {
	t.Parallel()
	chain, err := devnet.Start(context.Background(), devnet.Config{SlotInterval: -1})
	testenv.Must(t, err, "devnet")
	t.Cleanup(chain.Close)
	s := newSelfSettler(chain.NewKeypair(), chain.RPCURL(), time.Second)
	chain.AdvanceSlots(3)
	s.hintMu.Lock()
	s.hint = blockhashHint{at: time.Now().Add(-time.Minute)} // idle: the last refresh is a minute old
	s.hintMu.Unlock()
	h, lastValid, ok := s.recentBlockhash()
	if !ok || h != chain.LatestBlockhash() || lastValid == 0 {
		t.Fatalf("hint after idle: %s %d %v, want %s", h, lastValid, ok, chain.LatestBlockhash())
	}
}
