package web_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// logVector is one case for the browser's verifier.
type logVector struct {
	Name        string                  `json:"name"`
	Attestation attestation.Attestation `json:"attestation"`
	Proof       client.LogProof         `json:"proof"`
	Key         string                  `json:"key"`
	// Witnesses and Quorum are the witness policy (none: the log's
	// signature alone).
	Witnesses []string `json:"witnesses,omitempty"`
	Quorum    int      `json:"quorum"`
	// Want is "ok" or the step that fails (logproof.js LogError.step).
	Want  string `json:"-"`
	Index int64  `json:"-"`
}

func randomAttestation(r *rand.Rand, i int) attestation.Attestation {
	b58 := func(n int) string {
		const digits = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
		var sb strings.Builder
		for range n {
			sb.WriteByte(digits[r.IntN(len(digits))])
		}
		return sb.String()
	}
	h := make([]byte, 32)
	for k := range h {
		h[k] = byte(r.UintN(256))
	}
	return attestation.Attestation{PDA: b58(44), AgentPDA: b58(43), AgentID: b58(44),
		ActionType: attestation.ActionType(r.IntN(attestation.NumActionTypes)), ActionHash: fmt.Sprintf("%x", h),
		TxSignature: b58(88), Slot: uint64(r.Int64N(1 << 40)), Timestamp: attestation.Unix(1_700_000_000 + r.Int64N(1e8)),
		Commitment: attestation.Finalized}
}

// logVectors are honest proofs at many sizes and tampered ones, with the
// verdict of the Go client (the reference the browser must agree with).
func logVectors(t *testing.T) []logVector {
	t.Helper()
	var out []logVector
	r := rand.New(rand.NewPCG(24, 24))
	build := func(size int) (*logfixture.Log, []attestation.Attestation) {
		l, err := logfixture.New("attestd.test/log")
		testenv.Must(t, err, "log")
		as := make([]attestation.Attestation, size)
		for i := range as {
			as[i] = randomAttestation(r, i)
			_, err := l.Append(&as[i])
			testenv.Must(t, err, "append")
		}
		return l, as
	}
	proof := func(l *logfixture.Log, as []attestation.Attestation, i int) client.LogProof {
		p, err := l.Proof(int64(i), int64(len(as)), &as[i])
		testenv.Must(t, err, "proof")
		return *p
	}
	for _, size := range []int{1, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257} {
		l, as := build(size)
		for _, i := range []int{0, size / 2, size - 1, r.IntN(size)} {
			out = append(out, logVector{Name: fmt.Sprintf("size %d leaf %d", size, i), Attestation: as[i], Proof: proof(l, as, i),
				Key: l.VerifierKey, Want: "ok", Index: int64(i)})
		}
	}
	l, as := build(21)
	other, err := logfixture.New("attestd.test/log")
	testenv.Must(t, err, "other log")
	body, err := l.CheckpointBody(21)
	testenv.Must(t, err, "body")
	root, _ := l.RootHash(21)
	sign := func(text string) string {
		s, err := l.Sign(text)
		testenv.Must(t, err, "sign")
		return s
	}
	tamper := []struct {
		name, want string
		edit       func(a *attestation.Attestation, p *client.LogProof, key *string)
	}{
		{"leaf byte flipped", "leaf", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.Leaf[3] ^= 1 }},
		{"served action hash differs", "leaf", func(a *attestation.Attestation, _ *client.LogProof, _ *string) {
			a.ActionHash = strings.Repeat("0", 64)
		}},
		{"served timestamp differs", "leaf", func(a *attestation.Attestation, _ *client.LogProof, _ *string) {
			a.Timestamp = attestation.Unix(a.Timestamp.Unix() + 1)
		}},
		{"proof tx signature differs", "leaf", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.TxSignature = "x" }},
		{"leaf and attestation rewritten together", "proof", func(a *attestation.Attestation, p *client.LogProof, _ *string) {
			a.Slot++
			p.Slot++
			p.Leaf, _ = client.LeafBytes(a)
		}},
		{"proof hash flipped", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.InclusionProof[1][7] ^= 4 }},
		{"proof hash dropped", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.InclusionProof = p.InclusionProof[:len(p.InclusionProof)-1]
		}},
		{"proof hash added", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.InclusionProof = append(p.InclusionProof, make([]byte, 32))
		}},
		{"proof hash short", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.InclusionProof[0] = p.InclusionProof[0][:31]
		}},
		{"wrong leaf index", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.LeafIndex = 12 }},
		{"leaf index past the tree", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.LeafIndex = 21 }},
		{"tree size differs from the checkpoint", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.TreeSize = 22 }},
		{"root tampered, signature kept", "signature", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.Checkpoint = strings.Replace(p.Checkpoint, root.String(), tlog.RecordHash([]byte("x")).String(), 1)
		}},
		{"root tampered and signed", "proof", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.Checkpoint = sign(logfixture.FormatCheckpoint("attestd.test/log", 21, tlog.RecordHash([]byte("x"))))
		}},
		{"signature flipped", "signature", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			i := strings.LastIndex(p.Checkpoint, " ")
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(p.Checkpoint[i+1:]))
			raw[20] ^= 1
			p.Checkpoint = p.Checkpoint[:i+1] + base64.StdEncoding.EncodeToString(raw) + "\n"
		}},
		{"signed by another key of the same name", "signature", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.Checkpoint, _ = other.Sign(body)
		}},
		{"verified with another key", "signature", func(_ *attestation.Attestation, _ *client.LogProof, key *string) { *key = other.VerifierKey }},
		{"signed checkpoint of another origin", "origin", func(_ *attestation.Attestation, p *client.LogProof, _ *string) {
			p.Checkpoint = sign(logfixture.FormatCheckpoint("evil.example/log", 21, root))
		}},
		{"no signature", "checkpoint", func(_ *attestation.Attestation, p *client.LogProof, _ *string) { p.Checkpoint = body }},
		{"verifier key hash wrong", "key", func(_ *attestation.Attestation, _ *client.LogProof, key *string) {
			parts := strings.SplitN(l.VerifierKey, "+", 3)
			*key = parts[0] + "+00000000+" + parts[2]
		}},
		{"verifier key not a key", "key", func(_ *attestation.Attestation, _ *client.LogProof, key *string) { *key = "nonsense" }},
	}
	for _, tc := range tamper {
		a := as[13]
		p := proof(l, as, 13)
		key := l.VerifierKey
		tc.edit(&a, &p, &key)
		out = append(out, logVector{Name: tc.name, Attestation: a, Proof: p, Key: key, Want: tc.want, Index: -1})
	}
	out = append(out, witnessVectors(t, l, as)...)
	// The Go client is the reference: same verdict, ok or not.
	for _, v := range out {
		lv, err := client.NewLogVerifier(v.Key)
		if err == nil && len(v.Witnesses) > 0 {
			lv, err = lv.WithWitnesses(v.Quorum, v.Witnesses...)
		}
		if err == nil {
			_, err = client.VerifyInclusion(lv, &v.Attestation, &v.Proof)
		}
		if v.Want == "witness" && !errors.Is(err, client.ErrCheckpointWitnesses) && err != nil && !strings.Contains(err.Error(), "witness") {
			t.Fatalf("vector %q: the Go client says %v", v.Name, err)
		}
		if (err == nil) != (v.Want == "ok") {
			t.Fatalf("vector %q: the Go client says %v, want %s", v.Name, err, v.Want)
		}
		if v.Want == "proof" && !errors.Is(err, client.ErrInclusionProof) {
			t.Fatalf("vector %q: the Go client says %v", v.Name, err)
		}
	}
	return out
}

// TestLogProofJSVectors runs web/assets/logproof.js under Node.js (its
// WebCrypto: Ed25519 and SHA-256, as a browser has them) on proofs made by
// a real tree in Go: every honest proof verifies at its index, every
// tampered one fails at the expected step.
func TestLogProofJSVectors(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed; this test runs logproof.js under Node.js (apt-get install nodejs)")
	}
	vectors := logVectors(t)
	dir := t.TempDir()
	src, err := os.ReadFile("assets/logproof.js")
	testenv.Must(t, err, "read logproof.js")
	runner, err := os.ReadFile("testdata/logproof_vectors.mjs")
	testenv.Must(t, err, "read runner")
	b, err := json.Marshal(vectors)
	testenv.Must(t, err, "vectors")
	for name, data := range map[string][]byte{"logproof.mjs": src, "run.mjs": runner, "vectors.json": b} {
		testenv.Must(t, os.WriteFile(filepath.Join(dir, name), data, 0o600), "write %s", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "run.mjs"), filepath.Join(dir, "vectors.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []struct {
		Name, Result string
		Index        int64
	}
	testenv.Must(t, json.Unmarshal(stdout.Bytes(), &got), "decode %s", stdout.String())
	if len(got) != len(vectors) {
		t.Fatalf("%d verdicts for %d vectors", len(got), len(vectors))
	}
	for i, v := range vectors {
		if got[i].Result != v.Want || (v.Want == "ok" && got[i].Index != v.Index) {
			t.Errorf("%s: logproof.js says %s (index %d), want %s (index %d)", v.Name, got[i].Result, got[i].Index, v.Want, v.Index)
		}
	}
	t.Logf("%d vectors (%d honest, %d tampered) agree", len(vectors), countOK(vectors), len(vectors)-countOK(vectors))
}

func countOK(vs []logVector) int {
	n := 0
	for _, v := range vs {
		if v.Want == "ok" {
			n++
		}
	}
	return n
}

// witnessVectors are proofs whose checkpoint carries witnesses'
// cosignatures (C2SP tlog-cosignature, made with the signer the tests
// check against torchwood's), checked under witness policies.
func witnessVectors(t *testing.T, l *logfixture.Log, as []attestation.Attestation) []logVector {
	t.Helper()
	signer := func(name string) (*logformat.CosignatureSigner, string) {
		_, priv, err := ed25519.GenerateKey(crand.Reader)
		testenv.Must(t, err, "witness key")
		return logformat.NewCosignatureSigner(name, priv), logformat.NewCosignatureKey(name, priv.Public().(ed25519.PublicKey))
	}
	w1, k1 := signer("w1.test/w")
	w2, k2 := signer("w2.test/w")
	_, k3 := signer("w3.test/w")       // trusted, never cosigns
	impostor, _ := signer("w1.test/w") // w1's name, another key
	body, err := l.CheckpointBody(int64(len(as)))
	testenv.Must(t, err, "body")
	cosigned := func(ws ...note.Signer) string {
		signers := append([]note.Signer{l.Signer()}, ws...)
		n, err := note.Sign(&note.Note{Text: body}, signers...)
		testenv.Must(t, err, "cosign")
		return string(n)
	}
	both := cosigned(w1, w2)
	// w1's and w2's cosignature lines of the tree one leaf smaller.
	body20, err := l.CheckpointBody(int64(len(as) - 1))
	testenv.Must(t, err, "body")
	n20, err := note.Sign(&note.Note{Text: body20}, w1, w2)
	testenv.Must(t, err, "cosign")
	otherCosigs := strings.SplitN(string(n20), "\n\n", 2)[1]
	flip := func(cp, name string, at int) string {
		lines := strings.Split(cp, "\n")
		for i, line := range lines {
			if strings.HasPrefix(line, "— "+name+" ") {
				j := strings.LastIndex(line, " ")
				raw, _ := base64.StdEncoding.DecodeString(line[j+1:])
				raw[at] ^= 1
				lines[i] = line[:j+1] + base64.StdEncoding.EncodeToString(raw)
			}
		}
		return strings.Join(lines, "\n")
	}
	cases := []struct {
		name, checkpoint string
		witnesses        []string
		quorum           int
		want             string
	}{
		{"2 of 2 witnesses", both, []string{k1, k2}, 2, "ok"},
		{"1 of a silent and w2", both, []string{k3, k2}, 1, "ok"},
		{"no policy, cosignatures ignored", both, nil, 0, "ok"},
		{"quorum 0 with witnesses", cosigned(), []string{k1}, 0, "ok"},
		{"2 of a silent and w2", both, []string{k3, k2}, 2, "witness"},
		{"no cosignature, 1 required", cosigned(), []string{k1}, 1, "witness"},
		{"w1 cosignature signature flipped", flip(both, "w1.test/w", 40), []string{k1, k2}, 2, "witness"},
		{"w1 cosignature time changed", flip(both, "w1.test/w", 11), []string{k1, k2}, 2, "witness"},
		{"w1 key ID changed: not w1's", flip(both, "w1.test/w", 0), []string{k1, k2}, 2, "witness"},
		{"impostor of w1's name", cosigned(impostor, w2), []string{k1, k2}, 2, "witness"},
		{"impostor ignored, 1 of 2", cosigned(impostor, w2), []string{k1, k2}, 1, "ok"},
		{"cosignatures of another checkpoint", cosigned() + otherCosigs, []string{k1, k2}, 2, "witness"},
		{"witness key not a key", both, []string{"nonsense"}, 1, "witness"},
		{"witness key is a log key", both, []string{l.VerifierKey}, 1, "witness"},
	}
	var out []logVector
	for _, c := range cases {
		p, err := l.Proof(13, int64(len(as)), &as[13])
		testenv.Must(t, err, "proof")
		p.Checkpoint = c.checkpoint
		out = append(out, logVector{Name: "witnesses: " + c.name, Attestation: as[13], Proof: *p, Key: l.VerifierKey,
			Witnesses: c.witnesses, Quorum: c.quorum, Want: c.want, Index: 13})
	}
	return out
}
