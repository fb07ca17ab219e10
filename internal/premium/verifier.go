package premium

import (
	"runtime"
	"sync"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
)

// verifier re-checks Ed25519 signatures from stored bytes, on every core.
//
// Verification is a pure function of (agent key, action hash, signature),
// keyed here by the SHA-256 of those 128 bytes. A row the indexer verified
// carries that digest (verified_digest); when it still matches the stored
// bytes the check is not repeated. Otherwise results are memoised in
// process by the same digest: a record whose stored key, hash or signature
// changed has a new digest and is verified afresh. The stored
// signature_valid flag alone is never trusted. The memo is bounded; when
// full it forgets an arbitrary tenth.
type verifier struct {
	mu   sync.RWMutex
	memo map[[32]byte]bool
	max  int // 0: no memo
}

func newVerifier(memoEntries int) *verifier {
	v := &verifier{max: max(memoEntries, 0)}
	if v.max > 0 {
		v.memo = make(map[[32]byte]bool, min(v.max, 1<<16))
	}
	return v
}

func memoKey(r *store.VerifyRow) [32]byte {
	return store.VerifiedDigest(r.AgentID, r.ActionHash, r.Signature)
}

// check verifies one row, through the memo.
func (v *verifier) check(r *store.VerifyRow) bool {
	if r.CheckedAtIngest {
		// Verified at ingest over these very bytes (the stored digest
		// still matches them); a changed row does not match and falls
		// through to a fresh check.
		return true
	}
	if v.max == 0 {
		return attestation.VerifySignature(r.AgentID, r.ActionHash, r.Signature)
	}
	k := memoKey(r)
	v.mu.RLock()
	ok, hit := v.memo[k]
	v.mu.RUnlock()
	if hit {
		return ok
	}
	ok = attestation.VerifySignature(r.AgentID, r.ActionHash, r.Signature)
	v.mu.Lock()
	if len(v.memo) >= v.max {
		drop := v.max/10 + 1
		for key := range v.memo {
			delete(v.memo, key)
			if drop--; drop == 0 {
				break
			}
		}
	}
	v.memo[k] = ok
	v.mu.Unlock()
	return ok
}

// checkAll verifies rows in parallel; out[i] is the result of rows[i].
func (v *verifier) checkAll(rows []store.VerifyRow) []bool {
	out := make([]bool, len(rows))
	workers := runtime.GOMAXPROCS(0)
	if len(rows) < 32 || workers < 2 {
		for i := range rows {
			out[i] = v.check(&rows[i])
		}
		return out
	}
	workers = min(workers, len(rows)/16)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(rows); i += workers {
				out[i] = v.check(&rows[i])
			}
		}(w)
	}
	wg.Wait()
	return out
}

// stream verifies rows as feed produces them, on every core, and returns
// the rows by pda with their results. It overlaps verification with the
// database still sending rows.
func (v *verifier) stream(feed func(emit func(store.VerifyRow)) error) (map[string]store.VerifyRow, map[string]bool, error) {
	rows := map[string]store.VerifyRow{}
	ok := map[string]bool{}
	var mu sync.Mutex
	jobs := make(chan store.VerifyRow, 256)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				good := v.check(&r)
				mu.Lock()
				ok[r.PDA] = good
				mu.Unlock()
			}
		}()
	}
	err := feed(func(r store.VerifyRow) {
		rows[r.PDA] = r
		jobs <- r
	})
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	return rows, ok, nil
}
