package translog_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestConfirmedNeverLogged: a confirmed attestation gets no leaf; one a
// fork removes never gets one; one that is finalized later gets exactly
// one, after the leaves finalized before it.
func TestConfirmedNeverLogged(t *testing.T) {
	le := newLogEnv(t, 2)
	ctx := context.Background()
	first := le.add(t, 5, attestation.Finalized)
	conf := le.bulk(t, 6, attestation.Confirmed) // a transaction each
	le.appendAll(t)
	if n := le.count(t, `SELECT count(*) FROM log_leaves`); n != 5 {
		t.Fatalf("%d leaves, want the 5 finalized", n)
	}
	// A fork drops conf[0]'s transaction; conf[1]'s is finalized.
	_, err := le.st.RemoveTransactions(ctx, []string{conf[0].TxSignature})
	testenv.Must(t, err, "remove")
	_, err = le.st.Finalize(ctx, []string{conf[1].TxSignature})
	testenv.Must(t, err, "finalize")
	le.appendAll(t)
	waitCheckpoint(t, le.node, 6)
	if n := le.count(t, `SELECT count(*) FROM log_leaves WHERE pda = '`+conf[0].PDA+`'`); n != 0 {
		t.Fatal("the attestation a fork removed has a leaf")
	}
	var idx int64
	testenv.Must(t, le.st.Pool().QueryRow(ctx, `SELECT idx FROM log_leaves WHERE pda = $1`, conf[1].PDA).Scan(&idx), "idx")
	if idx != 5 {
		t.Fatalf("the later finalized attestation is leaf %d, want 5", idx)
	}
	for _, c := range conf[2:] {
		r := le.node.Get(t, "/attestations/"+c.PDA+"/proof")
		if r.Status != http.StatusConflict || r.ErrorCode() != "ATTESTATION_NOT_FINALIZED" {
			t.Fatalf("confirmed %s: %d %s", c.PDA, r.Status, r.Body)
		}
	}
	r := le.node.Get(t, "/attestations/"+conf[0].PDA+"/proof")
	if r.Status != http.StatusNotFound {
		t.Fatalf("removed: %d %s", r.Status, r.Body)
	}
	checkInvariants(t, le)
	got, err := le.st.LogIndexes(ctx, []string{first[0].PDA, first[4].PDA, conf[1].PDA, conf[2].PDA, conf[0].PDA, "nope"})
	testenv.Must(t, err, "log indexes")
	if len(got) != 3 || got[first[0].PDA] != 0 || got[first[4].PDA] != 4 || got[conf[1].PDA] != 5 {
		t.Fatalf("LogIndexes: %v", got)
	}
}
