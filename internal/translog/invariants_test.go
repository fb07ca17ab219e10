package translog_test

import (
	"context"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"golang.org/x/mod/sumdb/tlog"
)

// checkInvariants holds the log to its promises once the queue is
// drained: one leaf per finalized attestation and none other, indexes
// 0..n-1 without a gap, each leaf the LogLeaf of its attestation, the
// stored hashes exactly the RFC 6962 ones of those leaves, the size row
// right.
func checkInvariants(t testing.TB, le *logEnv) {
	t.Helper()
	ctx := context.Background()
	if q := le.count(t, `SELECT count(*) FROM log_queue`); q != 0 {
		t.Fatalf("%d attestations still queued", q)
	}
	final := le.count(t, `SELECT count(*) FROM attestations WHERE finalized`)
	leaves := le.count(t, `SELECT count(*) FROM log_leaves`)
	if leaves != final {
		t.Fatalf("%d leaves, %d finalized attestations", leaves, final)
	}
	if n := le.count(t, `SELECT count(*) FROM log_leaves l JOIN attestations a USING (pda) WHERE a.finalized`); n != final {
		t.Fatalf("%d leaves are of finalized attestations, want %d", n, final)
	}
	if n := le.count(t, `SELECT COALESCE(max(idx) + 1, 0) FROM log_leaves`); n != leaves {
		t.Fatalf("leaf indexes reach %d for %d leaves: a gap", n, leaves)
	}
	if n := le.count(t, `SELECT size FROM log_size`); n != leaves {
		t.Fatalf("log_size %d, %d leaves", n, leaves)
	}
	if n := le.count(t, `SELECT count(*) FROM log_hashes`); n != tlog.StoredHashCount(leaves) {
		t.Fatalf("%d stored hashes, want %d", n, tlog.StoredHashCount(leaves))
	}
	// Recompute every stored hash from the leaves.
	rows, err := le.st.Pool().Query(ctx, `SELECT l.leaf, a.pda FROM log_leaves l JOIN attestations a USING (pda) ORDER BY l.idx`)
	testenv.Must(t, err, "leaves")
	mem := map[int64]tlog.Hash{}
	r := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = mem[id]
		}
		return out, nil
	})
	var n int64
	var pdas []string
	var leafBytes [][]byte
	for rows.Next() {
		var leaf []byte
		var pda string
		testenv.Must(t, rows.Scan(&leaf, &pda), "scan")
		hs, err := tlog.StoredHashes(n, leaf, r)
		testenv.Must(t, err, "hash")
		for j, h := range hs {
			mem[tlog.StoredHashIndex(0, n)+int64(j)] = h
		}
		pdas, leafBytes = append(pdas, pda), append(leafBytes, leaf)
		n++
	}
	rows.Close()
	stored, err := le.st.Pool().Query(ctx, `SELECT id, hash FROM log_hashes`)
	testenv.Must(t, err, "hashes")
	for stored.Next() {
		var id int64
		var h []byte
		testenv.Must(t, stored.Scan(&id, &h), "scan")
		if want, ok := mem[id]; !ok || string(h) != string(want[:]) {
			t.Fatalf("stored hash %d is not the RFC 6962 hash of the leaves", id)
		}
	}
	stored.Close()
	// Each leaf is its attestation's (sampled: every leaf of small logs).
	step := max(1, len(pdas)/200)
	for i := 0; i < len(pdas); i += step {
		a, err := le.st.GetAttestation(ctx, pdas[i])
		testenv.Must(t, err, "attestation")
		want, err := attestation.LogLeaf(a)
		testenv.Must(t, err, "leaf")
		if string(want) != string(leafBytes[i]) {
			t.Fatalf("leaf %d is not its attestation's: %s vs %s", i, leafBytes[i], want)
		}
	}
}
