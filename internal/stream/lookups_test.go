package stream

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
)

// TestLookupFiltersHonoured: actionHash and txSignature filter the stream
// as they filter the list, live (from memory) and on resume (from the
// log); their hostile values are the list's 400s.
func TestLookupFiltersHonoured(t *testing.T) {
	x := newHarness(t, Config{})
	for _, q := range []string{"?actionHash=" + strings.Repeat("a", 63), "?actionHash=xyz", "?txSignature=" + strings.Repeat("1", 10),
		"?txSignature=" + strings.Repeat("z", 86) + "0", "?actionHash=" + strings.Repeat("ab", 32) + "&actionHash=" + strings.Repeat("ab", 32)} {
		if r, resp := x.open(q, nil); r != nil || resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", q, resp.StatusCode)
		}
	}
	hash := sha256.Sum256([]byte("the payload we look for"))
	made := func(agent int, n int, slot uint64, seedN uint64, hashed ...int) []store.AttestationRecord {
		a := x.env.Seeded.Agents[agent]
		recs := seed.NewAttestations([]seed.Agent{a}, n, time.Now(), slot, seedN)
		for _, i := range hashed {
			recs[i].ActionHash = hash
			copy(recs[i].Signature[:], ed25519.Sign(a.Key, hash[:]))
		}
		return recs
	}
	x.mu.Lock()
	base := x.slot + 1000
	x.slot = base + 1000
	x.mu.Unlock()
	first := made(0, 3, base, 801, 1)
	second := made(1, 4, base+100, 802)
	last := made(2, 2, base+200, 803, 0)
	byHash, resp := x.open("?actionHash="+strings.ToUpper(hex.EncodeToString(hash[:])), nil)
	if byHash == nil {
		t.Fatalf("by hash: status %d", resp.StatusCode)
	}
	byTx, resp := x.open("?txSignature="+second[0].TxSignature, nil)
	if byTx == nil {
		t.Fatalf("by transaction: status %d", resp.StatusCode)
	}
	x.waitReady()
	before, err := x.env.Store.ListAttestations(context.Background(), store.Filter{Limit: 1})
	if err != nil || len(before.Items) != 1 {
		t.Fatalf("the newest attestation before: %v", err)
	}
	for _, recs := range [][]store.AttestationRecord{first, second, last} {
		if _, err := x.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
			t.Fatal(err)
		}
	}
	api := func(recs ...store.AttestationRecord) []attestation.Attestation {
		var out []attestation.Attestation
		for _, r := range recs {
			out = append(out, r.API())
		}
		return sortLikeLog(out)
	}
	ids := func(as []attestation.Attestation) []string {
		var out []string
		for _, a := range as {
			out = append(out, cursorOf(a))
		}
		return out
	}
	wantHash := ids(api(first[1], last[0]))
	var sameTx []store.AttestationRecord // the records of second's first transaction (it may hold one or several)
	for _, r := range second {
		if r.TxSignature == second[0].TxSignature {
			sameTx = append(sameTx, r)
		}
	}
	wantTx := ids(api(sameTx...))
	for name, c := range map[string]struct {
		r    *sseReader
		want []string
	}{"live by hash": {byHash, wantHash}, "live by transaction": {byTx, wantTx}} {
		var got []string
		for len(got) < len(c.want) {
			e := c.r.mustNext(t)
			if e.Event == "attestation" {
				got = append(got, e.ID)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v\nwant %v", name, got, c.want)
		}
	}
	// Resumed from before them all: the log, filtered.
	resumed, resp := x.open("?actionHash="+hex.EncodeToString(hash[:])+"&after="+cursorOf(before.Items[0]), nil)
	if resumed == nil {
		t.Fatalf("resumed: status %d", resp.StatusCode)
	}
	var got []string
	for len(got) < len(wantHash) {
		if e := resumed.mustNext(t); e.Event == "attestation" {
			got = append(got, e.ID)
		}
	}
	if !slices.Equal(got, wantHash) {
		t.Errorf("resumed by hash: %v, want %v", got, wantHash)
	}
}
