package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestVerifyAgainstNode checks the verifiers against the real log: a node
// serving what the appender wrote to PostgreSQL.
func TestVerifyAgainstNode(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 40})
	lg := logfixture.NewServed(t, env, "attestd.test/log")
	first := lg.AppendAll(t)
	if first.Size != 40 {
		t.Fatalf("log of %d leaves, want 40", first.Size)
	}
	node := env.StartNode(t, lg.NodeOptions(t, nil))
	c := newClient(t, node.Root)
	v := mustVerifier(t, lg.VerifierKey)
	bg := context.Background()

	key, err := c.LogKey(bg)
	if err != nil || key != lg.VerifierKey {
		t.Fatalf("LogKey: %q, %v", key, err)
	}
	page, err := c.ListAttestations(bg, client.ListParams{Limit: 100})
	testenv.Must(t, err, "list")
	seen := map[int64]bool{}
	for _, a := range page.Data {
		want, err := attestation.LogLeaf(a)
		testenv.Must(t, err, "LogLeaf")
		got, err := client.LeafBytes(&a)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("client.LeafBytes %s, %v; the log's LogLeaf %s", got, err, want)
		}
		_, in, err := c.VerifyAttestation(bg, v, a.PDA)
		if err != nil {
			t.Fatalf("verify %s: %v", a.PDA, err)
		}
		if in.TreeSize != 40 || seen[in.LeafIndex] || in.TxSignature != a.TxSignature || in.Slot != a.Slot {
			t.Fatalf("inclusion %+v (seen %v)", in, seen)
		}
		seen[in.LeafIndex] = true
	}
	if len(seen) != 40 {
		t.Fatalf("%d distinct leaves", len(seen))
	}

	// A confirmed attestation has no proof: ErrNotLogged and the 409.
	recs := seed.NewAttestations(env.Seeded.Agents, 3, time.Now(), 1_000_000, 42)
	for i := range recs {
		recs[i].Commitment = attestation.Confirmed
	}
	_, err = env.Store.Apply(bg, &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	pending := recs[0].PDA
	_, _, err = c.VerifyAttestation(bg, v, pending)
	var ae *client.APIError
	if !errors.Is(err, client.ErrNotLogged) || !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("confirmed attestation: %v", err)
	}

	// A monitor sees the tree grow once they are finalized and appended.
	m := &client.Monitor{Client: c, Verifier: v, Store: &client.MemoryStore{}}
	res, err := m.Check(bg)
	if err != nil || res.Current.Size != 40 {
		t.Fatalf("first check: %+v %v", res, err)
	}
	txs := []string{}
	for _, r := range recs {
		txs = append(txs, r.TxSignature)
	}
	_, err = env.Store.Finalize(bg, txs)
	testenv.Must(t, err, "finalize")
	lg.AppendAll(t)
	testenv.WaitForState(t, "the node serves the grown tree", testenv.Patience, testenv.Every(30*time.Millisecond, func() (bool, string) {
		res, err = m.Check(bg)
		if err != nil {
			t.Fatalf("monitor after growth: %v", err)
		}
		return res.Current.Size == 43, fmt.Sprintf("a tree of %d, want 43", res.Current.Size)
	}))
	if !res.Proved || res.Previous.Size != 40 {
		t.Fatalf("growth not proved: %+v", res)
	}
	if _, in, err := c.VerifyAttestation(bg, v, pending); err != nil || in.TreeSize != 43 {
		t.Fatalf("verify the newly logged one: %+v %v", in, err)
	}
	// The wrong key fails with a signature error.
	other, _ := logfixture.New("attestd.test/log")
	if _, _, err := c.VerifyAttestation(bg, mustVerifier(t, other.VerifierKey), pending); !errors.Is(err, client.ErrCheckpointSignature) {
		t.Fatalf("wrong key: %v", err)
	}
}
