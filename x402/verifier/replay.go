package verifier

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplayTTL is how long a claimed transaction message is remembered in
// Redis: well past the life of its blockhash (150 slots, 60 to 90 s), after
// which the chain refuses the transaction anyway. The ledger's unique key
// remembers for ever.
const ReplayTTL = 10 * time.Minute

// replayGuard claims transaction messages in Redis, one key each (so a
// Redis Cluster serves it: single-key commands only).
type replayGuard struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration
}

func (g *replayGuard) key(hash [32]byte) string {
	return g.prefix + "tx:" + hex.EncodeToString(hash[:])
}

// claim sets the message's key if absent. claimed is false when another
// request holds it; err means Redis did not answer (the ledger decides).
func (g *replayGuard) claim(ctx context.Context, hash [32]byte, owner string) (claimed bool, err error) {
	if g.rdb == nil {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return g.rdb.SetNX(ctx, g.key(hash), owner, ReplayTTL).Result()
}

// release gives a claim back (nothing was charged). Only the holder's
// value is deleted... by construction: callers release only their claims.
func (g *replayGuard) release(ctx context.Context, hash [32]byte) error {
	if g.rdb == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return g.rdb.Del(ctx, g.key(hash)).Err()
}
