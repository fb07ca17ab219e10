package translog_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// proofAnswer is the answer of GET /attestations/{id}/proof.
type proofAnswer struct {
	Data struct {
		LeafIndex      int64    `json:"leafIndex"`
		TreeSize       int64    `json:"treeSize"`
		Leaf           []byte   `json:"leaf"`
		InclusionProof [][]byte `json:"inclusionProof"`
		Checkpoint     string   `json:"checkpoint"`
		TxSignature    string   `json:"txSignature"`
		Slot           uint64   `json:"slot"`
	} `json:"data"`
}

// verifyProof checks an inclusion proof as a client that trusts only the
// verifier key would: the checkpoint's signature, the leaf's content
// against the attestation, the audit path against the root.
func verifyProof(vkey string, p proofAnswer, want attestation.Attestation) error {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return err
	}
	cp, err := logformat.OpenCheckpoint([]byte(p.Data.Checkpoint), v)
	if err != nil {
		return err
	}
	if cp.Size != p.Data.TreeSize {
		return errf("checkpoint size %d, treeSize %d", cp.Size, p.Data.TreeSize)
	}
	leaf, err := attestation.LogLeaf(want)
	if err != nil {
		return err
	}
	if string(leaf) != string(p.Data.Leaf) {
		return errf("leaf %s, want %s", p.Data.Leaf, leaf)
	}
	proof := make(tlog.RecordProof, len(p.Data.InclusionProof))
	for i, h := range p.Data.InclusionProof {
		if len(h) != tlog.HashSize {
			return errf("proof hash %d of %d bytes", i, len(h))
		}
		proof[i] = tlog.Hash(h)
	}
	return tlog.CheckRecord(proof, cp.Size, cp.Root, p.Data.LeafIndex, tlog.RecordHash(p.Data.Leaf))
}

type testErr string

func (e testErr) Error() string { return string(e) }

func errf(format string, args ...any) error {
	return testErr(strings.TrimSpace(sprintf(format, args...)))
}

func TestProofAnswerVerifiesAndStates(t *testing.T) {
	le := newLogEnv(t, 3)
	final := le.add(t, 20, attestation.Finalized)
	confirmed := le.add(t, 3, attestation.Confirmed)

	// No checkpoint yet: 503 naming why.
	r := le.node.GetRoot(t, "/log/checkpoint")
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("checkpoint before any: %d %s", r.Status, r.Body)
	}
	cp := le.appendAll(t)
	if cp.Size != 20 {
		t.Fatalf("checkpoint size %d, want the 20 finalized", cp.Size)
	}
	waitCheckpoint(t, le.node, 20)
	for _, rec := range final {
		var p proofAnswer
		r := le.node.Get(t, "/attestations/"+rec.PDA+"/proof")
		if r.Status != http.StatusOK {
			t.Fatalf("proof of %s: %d %s", rec.PDA, r.Status, r.Body)
		}
		r.JSON(t, &p)
		if err := verifyProof(le.key.VerifierKey, p, rec.API()); err != nil {
			t.Fatalf("proof of %s does not verify: %v", rec.PDA, err)
		}
		if p.Data.TxSignature != rec.TxSignature || p.Data.Slot != rec.Slot {
			t.Fatalf("proof of %s names tx %s slot %d", rec.PDA, p.Data.TxSignature, p.Data.Slot)
		}
	}
	r = le.node.Get(t, "/attestations/"+confirmed[0].PDA+"/proof")
	if r.Status != http.StatusConflict || r.ErrorCode() != "ATTESTATION_NOT_FINALIZED" {
		t.Fatalf("confirmed: %d %s", r.Status, r.Body)
	}
	// Finalized but not appended yet: 409 not logged.
	late := le.add(t, 1, attestation.Finalized)
	r = le.node.Get(t, "/attestations/"+late[0].PDA+"/proof")
	if r.Status != http.StatusConflict || r.ErrorCode() != "ATTESTATION_NOT_LOGGED" {
		t.Fatalf("queued: %d %s", r.Status, r.Body)
	}
	r = le.node.Get(t, "/attestations/11111111111111111111111111111111/proof")
	if r.Status != http.StatusNotFound || r.ErrorCode() != "ATTESTATION_NOT_FOUND" {
		t.Fatalf("unknown: %d %s", r.Status, r.Body)
	}
	r = le.node.Get(t, "/attestations/nope/proof")
	if r.Status != http.StatusBadRequest {
		t.Fatalf("bad id: %d %s", r.Status, r.Body)
	}
	_ = base64.StdEncoding
	_ = context.Background
	_ = apptest.Logger
	_ = testenv.Must
}

// waitCheckpoint waits until the node serves a checkpoint of at least
// size.
func waitCheckpoint(t *testing.T, n *apptest.Node, size int64) string {
	t.Helper()
	var body string
	testenv.WaitForState(t, fmt.Sprintf("a checkpoint of size %d", size), testenv.Patience, func() (bool, string) {
		r := n.GetRoot(t, "/log/checkpoint")
		body = string(r.Body)
		if r.Status != http.StatusOK {
			return false, fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		c, err := logformat.ParseCheckpoint(body)
		return err == nil && c.Size >= size, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	return body
}
