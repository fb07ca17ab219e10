package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const testOrigin = "attestd.test/log"

// randomAttestation is an attestation with random fields.
func randomAttestation(r *rand.Rand, i int) *attestation.Attestation {
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
	return &attestation.Attestation{
		PDA: b58(44), AgentPDA: b58(44), AgentID: b58(44),
		ActionType:  attestation.ActionType(r.IntN(attestation.NumActionTypes)),
		ActionHash:  fmt.Sprintf("%x", h),
		TxSignature: b58(88), Slot: uint64(300_000_000 + i),
		Timestamp:  attestation.Unix(1_790_000_000 + int64(i)),
		Commitment: attestation.Finalized,
	}
}

// filledLog is a log of n random attestations.
func filledLog(t *testing.T, n int, seed uint64) (*logfixture.Log, []*attestation.Attestation) {
	t.Helper()
	l, err := logfixture.New(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	as := make([]*attestation.Attestation, n)
	for i := range as {
		as[i] = randomAttestation(r, i)
		if _, err := l.Append(as[i]); err != nil {
			t.Fatal(err)
		}
	}
	return l, as
}

func mustVerifier(t *testing.T, vkey string) *client.LogVerifier {
	t.Helper()
	v, err := client.NewLogVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLeafBytesCanonical(t *testing.T) {
	a := &attestation.Attestation{
		PDA: "P", AgentPDA: "A", AgentID: "ignored", ActionType: attestation.ToolCall,
		ActionHash: "ab", TxSignature: "T", Slot: 12, Timestamp: attestation.Unix(1_700_000_000),
		PrivacyMode: true, AgentSignature: "ignored", Commitment: attestation.Finalized,
	}
	got, err := client.LeafBytes(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"actionHash":"ab","actionType":"ToolCall","agentPda":"A","pda":"P","slot":12,"timestamp":"2023-11-14T22:13:20Z","txSignature":"T"}`
	if string(got) != want {
		t.Fatalf("leaf bytes\n got %s\nwant %s", got, want)
	}
	a.Slot = 1 << 60
	if _, err := client.LeafBytes(a); err == nil {
		t.Fatal("slot beyond 2^53 accepted")
	}
}

func TestVerifyInclusionSizes(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257} {
		l, as := filledLog(t, size, uint64(size))
		v := mustVerifier(t, l.VerifierKey)
		r := rand.New(rand.NewPCG(uint64(size), 2))
		// every leaf of small trees, random ones of larger
		picks := []int{0, size - 1}
		for range 8 {
			picks = append(picks, r.IntN(size))
		}
		if size <= 9 {
			picks = picks[:0]
			for i := range size {
				picks = append(picks, i)
			}
		}
		for _, i := range picks {
			p, err := l.Proof(int64(i), int64(size), as[i])
			if err != nil {
				t.Fatal(err)
			}
			in, err := client.VerifyInclusion(v, as[i], p)
			if err != nil {
				t.Fatalf("size %d leaf %d: %v", size, i, err)
			}
			if in.LeafIndex != int64(i) || in.TreeSize != int64(size) || in.Checkpoint.KeyName != testOrigin {
				t.Fatalf("size %d leaf %d: inclusion %+v", size, i, in)
			}
		}
	}
}

func TestVerifyInclusionTampered(t *testing.T) {
	t.Parallel()
	const size = 21
	l, as := filledLog(t, size, 7)
	other, err := logfixture.New(testOrigin) // same name, another key
	if err != nil {
		t.Fatal(err)
	}
	v := mustVerifier(t, l.VerifierKey)
	const target = 13
	fresh := func() (*attestation.Attestation, *client.LogProof) {
		a := *as[target]
		p, err := l.Proof(target, size, &a)
		if err != nil {
			t.Fatal(err)
		}
		return &a, p
	}
	resign := func(p *client.LogProof, body string) {
		s, err := l.Sign(body)
		if err != nil {
			t.Fatal(err)
		}
		p.Checkpoint = s
	}
	flipSig := func(p *client.LogProof) {
		// the last line is "— name base64(keyhash||sig)": flip a bit of the signature
		lines := strings.Split(strings.TrimSuffix(p.Checkpoint, "\n"), "\n")
		last := lines[len(lines)-1]
		i := strings.LastIndex(last, " ")
		raw, _ := base64.StdEncoding.DecodeString(last[i+1:])
		raw[10] ^= 1
		lines[len(lines)-1] = last[:i+1] + base64.StdEncoding.EncodeToString(raw)
		p.Checkpoint = strings.Join(lines, "\n") + "\n"
	}
	cases := []struct {
		name   string
		mutate func(a *attestation.Attestation, p *client.LogProof)
		v      *client.LogVerifier
		want   error
	}{
		{"untouched", func(*attestation.Attestation, *client.LogProof) {}, v, nil},
		{"leaf byte flipped", func(_ *attestation.Attestation, p *client.LogProof) { p.Leaf[5] ^= 1 }, v, client.ErrLeafMismatch},
		{"leaf of another attestation", func(_ *attestation.Attestation, p *client.LogProof) {
			p.Leaf, _ = client.LeafBytes(as[12])
		}, v, client.ErrLeafMismatch},
		{"served action hash differs", func(a *attestation.Attestation, _ *client.LogProof) {
			a.ActionHash = strings.Repeat("0", 64)
		}, v, client.ErrLeafMismatch},
		{"served timestamp differs", func(a *attestation.Attestation, _ *client.LogProof) {
			a.Timestamp = attestation.Unix(a.Timestamp.Unix() + 1)
		}, v, client.ErrLeafMismatch},
		{"served action type differs", func(a *attestation.Attestation, _ *client.LogProof) {
			a.ActionType = (a.ActionType + 1) % attestation.NumActionTypes
		}, v, client.ErrLeafMismatch},
		{"leaf and attestation both rewritten", func(a *attestation.Attestation, p *client.LogProof) {
			a.Slot++
			p.Slot++
			p.Leaf, _ = client.LeafBytes(a)
		}, v, client.ErrInclusionProof},
		{"proof tx signature differs", func(_ *attestation.Attestation, p *client.LogProof) { p.TxSignature = "x" }, v, client.ErrLeafMismatch},
		{"proof hash flipped", func(_ *attestation.Attestation, p *client.LogProof) { p.InclusionProof[2][0] ^= 0x80 }, v, client.ErrInclusionProof},
		{"proof hash dropped", func(_ *attestation.Attestation, p *client.LogProof) {
			p.InclusionProof = p.InclusionProof[:len(p.InclusionProof)-1]
		}, v, client.ErrInclusionProof},
		{"proof hash added", func(_ *attestation.Attestation, p *client.LogProof) {
			p.InclusionProof = append(p.InclusionProof, make([]byte, 32))
		}, v, client.ErrInclusionProof},
		{"proof hash short", func(_ *attestation.Attestation, p *client.LogProof) { p.InclusionProof[0] = p.InclusionProof[0][:31] }, v, client.ErrInclusionProof},
		{"proof too long", func(_ *attestation.Attestation, p *client.LogProof) {
			p.InclusionProof = make([][]byte, client.MaxProofHashes+1)
		}, v, client.ErrInclusionProof},
		{"wrong leaf index", func(_ *attestation.Attestation, p *client.LogProof) { p.LeafIndex = 12 }, v, client.ErrInclusionProof},
		{"negative leaf index", func(_ *attestation.Attestation, p *client.LogProof) { p.LeafIndex = -1 }, v, client.ErrInclusionProof},
		{"leaf index past the tree", func(_ *attestation.Attestation, p *client.LogProof) { p.LeafIndex = size }, v, client.ErrInclusionProof},
		{"tree size differs from checkpoint", func(_ *attestation.Attestation, p *client.LogProof) { p.TreeSize = size + 1 }, v, client.ErrInclusionProof},
		{"root tampered, signature kept", func(_ *attestation.Attestation, p *client.LogProof) {
			body, _ := l.CheckpointBody(size)
			lines := strings.SplitN(body, "\n", 4)
			p.Checkpoint = strings.Replace(p.Checkpoint, lines[2], tlog.RecordHash([]byte("x")).String(), 1)
		}, v, client.ErrCheckpointSignature},
		{"root tampered and signed", func(_ *attestation.Attestation, p *client.LogProof) {
			resign(p, logfixture.FormatCheckpoint(testOrigin, size, tlog.RecordHash([]byte("x"))))
		}, v, client.ErrInclusionProof},
		// (size+1 would pass: leaf 13 has the same path in trees of 21
		// and 22 leaves, and the root is what the key signed. A lying
		// signer is caught by consistency, not by one inclusion proof.)
		{"size tampered and signed", func(_ *attestation.Attestation, p *client.LogProof) {
			h, _ := l.RootHash(size)
			resign(p, logfixture.FormatCheckpoint(testOrigin, 2*size, h))
			p.TreeSize = 2 * size
		}, v, client.ErrInclusionProof},
		{"signature flipped", func(_ *attestation.Attestation, p *client.LogProof) { flipSig(p) }, v, client.ErrCheckpointSignature},
		{"signature removed", func(_ *attestation.Attestation, p *client.LogProof) {
			body, _ := l.CheckpointBody(size)
			p.Checkpoint = body + "\n"
		}, v, client.ErrCheckpointMalformed},
		{"signed by another key of the same name", func(_ *attestation.Attestation, p *client.LogProof) {
			body, _ := l.CheckpointBody(size)
			p.Checkpoint, _ = other.Sign(body)
		}, v, client.ErrCheckpointSignature},
		{"verified with another key", func(*attestation.Attestation, *client.LogProof) {}, mustVerifier(t, other.VerifierKey), client.ErrCheckpointSignature},
		{"origin other than expected", func(*attestation.Attestation, *client.LogProof) {}, v.WithOrigin("attestd.other/log"), client.ErrCheckpointOrigin},
		{"signed checkpoint of another origin", func(_ *attestation.Attestation, p *client.LogProof) {
			h, _ := l.RootHash(size)
			resign(p, logfixture.FormatCheckpoint("evil.example/log", size, h))
		}, v, client.ErrCheckpointOrigin},
		{"signed body not a checkpoint", func(_ *attestation.Attestation, p *client.LogProof) { resign(p, "hello\n") }, v, client.ErrCheckpointMalformed},
		{"signed size with leading zero", func(_ *attestation.Attestation, p *client.LogProof) {
			h, _ := l.RootHash(size)
			resign(p, testOrigin+"\n021\n"+h.String()+"\n")
		}, v, client.ErrCheckpointMalformed},
		{"checkpoint empty", func(_ *attestation.Attestation, p *client.LogProof) { p.Checkpoint = "" }, v, client.ErrCheckpointMalformed},
		{"checkpoint huge", func(_ *attestation.Attestation, p *client.LogProof) {
			p.Checkpoint = strings.Repeat("a", 1<<20)
		}, v, client.ErrCheckpointMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, p := fresh()
			tc.mutate(a, p)
			in, err := client.VerifyInclusion(tc.v, a, p)
			if tc.want == nil {
				if err != nil || in.LeafIndex != target {
					t.Fatalf("got %v, %+v", err, in)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseCheckpoint(t *testing.T) {
	h := tlog.RecordHash([]byte("x")).String()
	cases := []struct {
		text string
		ok   bool
	}{
		{"o\n1\n" + h + "\n", true},
		{"o\n0\n" + h + "\n", true},
		{"o\n1\n" + h + "\next one\next two\n", true},
		{"o\n1\n" + h, false},
		{"\n1\n" + h + "\n", false},
		{"o\n-1\n" + h + "\n", false},
		{"o\n+1\n" + h + "\n", false},
		{"o\n01\n" + h + "\n", false},
		{"o\n1 \n" + h + "\n", false},
		{"o\n9223372036854775808\n" + h + "\n", false},
		{"o\n1\n" + h[:43] + "\n", false},
		{"o\n1\n" + strings.TrimRight(h, "=") + "\n", false},
		{"o\n1\n" + base64.StdEncoding.EncodeToString(make([]byte, 31)) + "\n", false},
		{"o\n1\n" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32)) + "\n", false},
		{"o\n1\n" + h + "\n\n", false},
		{"o\n1\n", false},
		{"o\xff\n1\n" + h + "\n", false},
	}
	for _, tc := range cases {
		_, err := client.ParseCheckpoint(tc.text)
		if (err == nil) != tc.ok {
			t.Errorf("ParseCheckpoint(%q): err %v, want ok=%v", tc.text, err, tc.ok)
		}
		if err != nil && !errors.Is(err, client.ErrCheckpointMalformed) {
			t.Errorf("ParseCheckpoint(%q): %v does not wrap ErrCheckpointMalformed", tc.text, err)
		}
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	h := tlog.RecordHash([]byte("x")).String()
	f.Add("o\n1\n" + h + "\n")
	f.Add("o\n0\n" + h + "\next\n")
	f.Add("o\n01\n" + h + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		cp, err := client.ParseCheckpoint(text)
		if err != nil {
			return
		}
		again := logfixture.FormatCheckpoint(cp.Origin, cp.Size, cp.Hash)
		for _, e := range cp.Extensions {
			again += e + "\n"
		}
		if again != text {
			t.Fatalf("parsed %q, formats back as %q", text, again)
		}
	})
}

func FuzzOpenCheckpoint(f *testing.F) {
	l, err := logfixture.New(testOrigin)
	if err != nil {
		f.Fatal(err)
	}
	l.AppendLeaf([]byte("a"))
	cp, _ := l.Checkpoint(1)
	f.Add([]byte(cp))
	f.Add([]byte("x\n\n— x AAAA\n"))
	v, err := client.NewLogVerifier(l.VerifierKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got, err := v.OpenCheckpoint(text)
		if err == nil && (got.Origin != testOrigin || got.Size != 1) {
			t.Fatalf("accepted a forged checkpoint %q", text)
		}
	})
}

// verifiedCheckpoint opens the signed checkpoint of size leaves of l.
func verifiedCheckpoint(t *testing.T, l *logfixture.Log, v *client.LogVerifier, size int64) *client.Checkpoint {
	t.Helper()
	s, err := l.Checkpoint(size)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := v.OpenCheckpoint([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestVerifyConsistency(t *testing.T) {
	t.Parallel()
	const size = 40
	l, _ := filledLog(t, size, 3)
	v := mustVerifier(t, l.VerifierKey)
	cps := make([]*client.Checkpoint, size+1)
	for n := range cps {
		cps[n] = verifiedCheckpoint(t, l, v, int64(n))
	}
	for from := 0; from <= size; from++ {
		for to := from; to <= size; to++ {
			p, err := l.Consistency(int64(from), int64(to))
			if err != nil {
				t.Fatal(err)
			}
			if err := client.VerifyConsistency(cps[from], cps[to], p); err != nil {
				t.Fatalf("%d -> %d: %v", from, to, err)
			}
			if from > 0 && from < to {
				for i := range p {
					bad := make([][]byte, len(p))
					for k := range p {
						bad[k] = bytes.Clone(p[k])
					}
					bad[i][31] ^= 1
					if err := client.VerifyConsistency(cps[from], cps[to], bad); !errors.Is(err, client.ErrConsistencyProof) {
						t.Fatalf("%d -> %d with hash %d tampered: %v", from, to, i, err)
					}
				}
				if err := client.VerifyConsistency(cps[from], cps[to], p[:len(p)-1]); !errors.Is(err, client.ErrConsistencyProof) {
					t.Fatalf("%d -> %d with a hash dropped: %v", from, to, err)
				}
			}
		}
	}
	// backwards, and a fork at the same size
	p, _ := l.Consistency(10, 20)
	if err := client.VerifyConsistency(cps[20], cps[10], p); !errors.Is(err, client.ErrConsistencyProof) {
		t.Fatalf("size going backwards: %v", err)
	}
	forked, _ := filledLog(t, size, 99)
	fk := verifiedCheckpoint(t, forked, mustVerifier(t, forked.VerifierKey), 20)
	if err := client.VerifyConsistency(cps[20], fk, nil); !errors.Is(err, client.ErrConsistencyProof) {
		t.Fatalf("same size, another root: %v", err)
	}
	fk30 := verifiedCheckpoint(t, forked, mustVerifier(t, forked.VerifierKey), 30)
	if err := client.VerifyConsistency(cps[20], fk30, p); !errors.Is(err, client.ErrConsistencyProof) {
		t.Fatalf("extension of another tree: %v", err)
	}
}

// monitorEnv is a log served over HTTP and a monitor of it.
type monitorEnv struct {
	log     *logfixture.Log
	handler *logfixture.Handler
	c       *client.Client
	v       *client.LogVerifier
}

func newMonitorEnv(t *testing.T, size int) *monitorEnv {
	t.Helper()
	l, _ := filledLog(t, size, 5)
	h := &logfixture.Handler{Log: l}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &monitorEnv{log: l, handler: h, c: newClient(t, srv.URL), v: mustVerifier(t, l.VerifierKey)}
}

func (e *monitorEnv) grow(t *testing.T, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(e.log.Size()), 9))
	for range n {
		if _, err := e.log.Append(randomAttestation(r, int(e.log.Size()))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMonitor(t *testing.T) {
	t.Parallel()
	e := newMonitorEnv(t, 5)
	state := filepath.Join(t.TempDir(), "checkpoint")
	m := &client.Monitor{Client: e.c, Verifier: e.v, Store: client.FileStore{Path: state}}
	c := context.Background()

	res, err := m.Check(c)
	if err != nil || res.Previous != nil || res.Current.Size != 5 || res.Proved {
		t.Fatalf("first check: %+v, %v", res, err)
	}
	// unchanged
	if res, err = m.Check(c); err != nil || res.Previous.Size != 5 || res.Proved {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	// grows: a fresh monitor over the same file proves the extension
	for _, n := range []int{1, 3, 57, 200} {
		e.grow(t, n)
		m2 := &client.Monitor{Client: e.c, Verifier: e.v, Store: client.FileStore{Path: state}}
		res, err = m2.Check(c)
		if err != nil || !res.Proved || res.Current.Size != e.log.Size() {
			t.Fatalf("after growing by %d: %+v, %v", n, res, err)
		}
	}
	good, _ := os.ReadFile(state)
	size := e.log.Size()

	// rollback: an older checkpoint, validly signed
	old, _ := e.log.Checkpoint(size - 10)
	e.handler.CheckpointText = func() string { return old }
	_, err = m.Check(c)
	var fe *client.ForkError
	if !errors.Is(err, client.ErrLogFork) || !errors.As(err, &fe) || fe.Kind != "rollback" || fe.Previous.Size != size || fe.Current.Size != size-10 {
		t.Fatalf("rollback: %v", err)
	}
	if now, _ := os.ReadFile(state); !bytes.Equal(now, good) {
		t.Fatal("a rollback replaced the saved checkpoint")
	}

	// fork at the same size: another tree signed by the log's key
	h := tlog.RecordHash([]byte("other"))
	forked, _ := e.log.Sign(logfixture.FormatCheckpoint(testOrigin, size, h))
	e.handler.CheckpointText = func() string { return forked }
	if _, err = m.Check(c); !errors.As(err, &fe) || fe.Kind != "fork" {
		t.Fatalf("same-size fork: %v", err)
	}

	// fork at a larger size: the service cannot prove consistency
	bigger, _ := e.log.Sign(logfixture.FormatCheckpoint(testOrigin, size+5, h))
	e.handler.CheckpointText = func() string { return bigger }
	e.grow(t, 5) // so the handler can answer a proof (for its real tree)
	if _, err = m.Check(c); !errors.As(err, &fe) || fe.Kind != "fork" || !errors.Is(err, client.ErrConsistencyProof) {
		t.Fatalf("larger fork: %v", err)
	}
	if now, _ := os.ReadFile(state); !bytes.Equal(now, good) {
		t.Fatal("a fork replaced the saved checkpoint")
	}

	// the real extension, with a tampered consistency proof
	e.handler.CheckpointText = nil
	e.handler.ConsistencyHook = func(_, _ int64, p [][]byte) [][]byte {
		p[0] = bytes.Repeat([]byte{1}, 32)
		return p
	}
	if _, err = m.Check(c); !errors.As(err, &fe) || fe.Kind != "fork" {
		t.Fatalf("tampered consistency proof: %v", err)
	}
	// and a proof answer for other sizes than asked
	e.handler.ConsistencyHook = nil
	// finally the honest answer is accepted
	if res, err = m.Check(c); err != nil || !res.Proved || res.Current.Size != size+5 {
		t.Fatalf("honest extension after the alarms: %+v, %v", res, err)
	}

	// a checkpoint signed by another key is not a fork: a signature error
	other, _ := logfixture.New(testOrigin)
	other.AppendLeaf([]byte("x"))
	foreign, _ := other.Checkpoint(1)
	e.handler.CheckpointText = func() string { return foreign }
	if _, err = m.Check(c); !errors.Is(err, client.ErrCheckpointSignature) || errors.Is(err, client.ErrLogFork) {
		t.Fatalf("foreign checkpoint: %v", err)
	}
	// a monitor with another key refuses the saved state
	m3 := &client.Monitor{Client: e.c, Verifier: mustVerifier(t, other.VerifierKey), Store: client.FileStore{Path: state}}
	if _, err = m3.Check(c); !errors.Is(err, client.ErrCheckpointSignature) {
		t.Fatalf("saved state under another key: %v", err)
	}
}

func TestMonitorWatch(t *testing.T) {
	t.Parallel()
	e := newMonitorEnv(t, 3)
	store := &client.MemoryStore{}
	m := &client.Monitor{Client: e.c, Verifier: e.v, Store: store}
	var sizes []int64
	err := m.Watch(context.Background(), time.Millisecond, func(res *client.MonitorResult, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, res.Current.Size)
		if len(sizes) == 3 {
			return false
		}
		e.grow(t, 2)
		return true
	})
	if err != nil || fmt.Sprint(sizes) != "[3 5 7]" {
		t.Fatalf("watch: %v, sizes %v", err, sizes)
	}
	if cp, _ := client.ParseCheckpoint(strings.SplitN(string(store.Note), "\n\n", 2)[0] + "\n"); cp == nil || cp.Size != 7 {
		t.Fatalf("saved %q", store.Note)
	}
}

func TestLogRoutesDecode(t *testing.T) {
	t.Parallel()
	e := newMonitorEnv(t, 4)
	key, err := e.c.LogKey(context.Background())
	if err != nil || key != e.log.VerifierKey {
		t.Fatalf("LogKey: %q, %v", key, err)
	}
	if _, err := e.c.LogConsistency(context.Background(), 3, 2); err == nil {
		t.Fatal("from > to accepted")
	}
	// The proof JSON decodes the API's base64 fields.
	p, _ := e.log.Proof(1, 4, nil)
	b, _ := json.Marshal(p)
	var back client.LogProof
	if err := json.Unmarshal(b, &back); err != nil || !bytes.Equal(back.Leaf, p.Leaf) || len(back.InclusionProof) != 2 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := note.NewVerifier(key); err != nil {
		t.Fatal(err)
	}
}
