package translog_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestTamperedProofFails: a verifier that trusts only the key rejects a
// proof answer whose leaf, proof hashes, checkpoint root or signature
// was changed, or whose checkpoint another key signed.
func TestTamperedProofFails(t *testing.T) {
	le := newLogEnv(t, 2)
	recs := le.add(t, 7, attestation.Finalized)
	le.appendAll(t)
	waitCheckpoint(t, le.node, 7)
	rec := recs[3]
	var good proofAnswer
	r := le.node.Get(t, "/attestations/"+rec.PDA+"/proof")
	if r.Status != http.StatusOK {
		t.Fatalf("proof: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &good)
	if err := verifyProof(le.key.VerifierKey, good, rec.API()); err != nil {
		t.Fatalf("untampered proof: %v", err)
	}
	if len(good.Data.InclusionProof) == 0 {
		t.Fatal("a tree of 7 gives every leaf a proof")
	}
	clone := func() proofAnswer {
		p := good
		p.Data.Leaf = append([]byte(nil), good.Data.Leaf...)
		p.Data.InclusionProof = nil
		for _, h := range good.Data.InclusionProof {
			p.Data.InclusionProof = append(p.Data.InclusionProof, append([]byte(nil), h...))
		}
		return p
	}
	v, err := note.NewVerifier(le.key.VerifierKey)
	testenv.Must(t, err, "verifier")
	cp, err := logformat.OpenCheckpoint([]byte(good.Data.Checkpoint), v)
	testenv.Must(t, err, "checkpoint")
	otherKey, _ := testKey(t, le.key.Name) // same name, another key
	forged, err := cp.Sign(otherKey.Signer)
	testenv.Must(t, err, "forge")
	badRoot := cp
	badRoot.Root[0] ^= 1
	cases := map[string]func(p *proofAnswer){
		"leaf byte":  func(p *proofAnswer) { p.Data.Leaf[len(p.Data.Leaf)/2] ^= 1 },
		"leaf index": func(p *proofAnswer) { p.Data.LeafIndex ^= 1 },
		"proof hash": func(p *proofAnswer) { p.Data.InclusionProof[0][5] ^= 0x80 },
		"proof dropped hash": func(p *proofAnswer) {
			p.Data.InclusionProof = p.Data.InclusionProof[:len(p.Data.InclusionProof)-1]
		},
		"root in checkpoint": func(p *proofAnswer) {
			p.Data.Checkpoint = strings.Replace(p.Data.Checkpoint, base64.StdEncoding.EncodeToString(cp.Root[:]),
				base64.StdEncoding.EncodeToString(badRoot.Root[:]), 1)
		},
		"size in checkpoint": func(p *proofAnswer) {
			p.Data.Checkpoint = strings.Replace(p.Data.Checkpoint, "\n7\n", "\n8\n", 1)
			p.Data.TreeSize = 8
		},
		"signature": func(p *proofAnswer) {
			i := strings.LastIndex(p.Data.Checkpoint, " ") + 5
			b := []byte(p.Data.Checkpoint)
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
			p.Data.Checkpoint = string(b)
		},
		"other key":  func(p *proofAnswer) { p.Data.Checkpoint = forged },
		"tree size":  func(p *proofAnswer) { p.Data.TreeSize = 6 },
		"other leaf": func(p *proofAnswer) { p.Data.Leaf = mustLeaf(t, recs[4].API()) },
	}
	for name, tamper := range cases {
		p := clone()
		tamper(&p)
		if err := verifyProof(le.key.VerifierKey, p, rec.API()); err == nil {
			t.Errorf("%s tampered: the proof still verifies", name)
		}
	}
	// The root itself, given to the check directly: the audit path fails.
	proof := make(tlog.RecordProof, len(good.Data.InclusionProof))
	for i, h := range good.Data.InclusionProof {
		proof[i] = tlog.Hash(h)
	}
	if err := tlog.CheckRecord(proof, cp.Size, badRoot.Root, good.Data.LeafIndex, tlog.RecordHash(good.Data.Leaf)); err == nil {
		t.Error("the proof verifies against a tampered root")
	}
	_ = context.Background
}

func mustLeaf(t testing.TB, a attestation.Attestation) []byte {
	b, err := attestation.LogLeaf(a)
	testenv.Must(t, err, "leaf")
	return b
}
