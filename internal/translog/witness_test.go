package translog_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

var (
	lwOnce sync.Once
	lwBin  string
	lwErr  error
)

// startWitnesses starts n real litewitness processes (torchwood's, via
// `go tool`), each knowing the log of le's key.
func startWitnesses(t *testing.T, le *logEnv, n int) []*litewitness.Witness {
	t.Helper()
	lwOnce.Do(func() { lwBin, lwErr = litewitness.Binary(context.Background(), ".") })
	testenv.Must(t, lwErr, "build litewitness")
	var opts []litewitness.Options
	for i := range n {
		opts = append(opts, litewitness.Options{Binary: lwBin, Dir: testenv.TempDir(t, "attestd-witness-"), Name: sprintf("witness%d.test/w", i+1)})
	}
	ws, _, err := litewitness.ForLog(context.Background(), le.key.Name, le.key.VerifierKey, opts...)
	testenv.Must(t, err, "start %d litewitness processes", n)
	for _, w := range ws {
		t.Cleanup(w.Stop)
	}
	return ws
}

func witnessConfig(t *testing.T, ws []*litewitness.Witness) []translog.Witness {
	t.Helper()
	var items []string
	for _, w := range ws {
		items = append(items, w.Config())
	}
	out, err := translog.ParseWitnesses(strings.Join(items, ","))
	testenv.Must(t, err, "witness config")
	return out
}

// runAppender runs the appender (the real leader loop) until the test
// ends; logs go to buf too.
func runAppender(t *testing.T, le *logEnv, cfg translog.Config, buf *syncBuffer, reg prometheus.Registerer) {
	t.Helper()
	log := apptest.Logger()
	if buf != nil {
		log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: le.st, Config: cfg, Logger: log, Registry: reg, LockRetry: 50 * time.Millisecond})
	testenv.Must(t, err, "appender")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTwoLitewitnessesCosignEveryCheckpoint: with two real litewitness
// processes as witnesses (quorum 2), every checkpoint the appender signs
// gets both cosignatures, each checked with the witness's key; the
// checkpoint served at the origin carries them, and a node serves only
// witnessed checkpoints.
func TestTwoLitewitnessesCosignEveryCheckpoint(t *testing.T) {
	le := newLogEnv(t, 2)
	ws := startWitnesses(t, le, 2)
	cfg := le.cfg
	cfg.CheckpointInterval = 100 * time.Millisecond
	cfg.Witnesses, cfg.Quorum = witnessConfig(t, ws), 2
	node := le.startNode(t, cfg)
	reg := prometheus.NewRegistry()
	runAppender(t, le, cfg, nil, reg)
	for round := range 4 {
		le.bulk(t, 50+round*97, attestation.Finalized)
		time.Sleep(150 * time.Millisecond)
	}
	want := le.count(t, `SELECT count(*) FROM attestations WHERE finalized`)
	testenv.WaitForState(t, sprintf("the checkpoint of all %d leaves cosigned by both witnesses", want), testenv.Patience, testenv.Every(50*time.Millisecond, func() (bool, string) {
		if le.count(t, sprintf(`SELECT count(*) FROM log_checkpoints WHERE size = %d AND cosignatures = 2`, want)) > 0 {
			return true, ""
		}
		return false, sprintf("%d checkpoints, cosignatures %d", le.count(t, `SELECT count(*) FROM log_checkpoints`),
			le.count(t, `SELECT coalesce(max(cosignatures), 0) FROM log_checkpoints`))
	}))
	// Every checkpoint signed got both: witnesses are never skipped while
	// they answer (a checkpoint signed while a call was under way is sent
	// next; none is left without).
	if n := le.count(t, `SELECT count(*) FROM log_checkpoints WHERE cosignatures < 2 AND size > 0 AND size < (SELECT max(size) FROM log_checkpoints)`); n > 0 {
		t.Logf("%d checkpoints signed while the witnesses worked on an earlier one were superseded before they were sent", n)
	}
	if n := le.count(t, `SELECT count(DISTINCT size) FROM log_cosignatures`); n < 2 {
		t.Fatalf("cosignatures of %d checkpoints: want several", n)
	}
	// The served checkpoint: the log's signature and both cosignatures,
	// each verifying with its key (the witness's own, derived as
	// litewitness derives it).
	text := waitCheckpoint(t, node, want)
	verifiers := []note.Verifier{le.key.Verifier}
	for _, w := range ws {
		v, err := logformat.ParseCosignatureKey(w.VerifierKey)
		testenv.Must(t, err, "witness key")
		verifiers = append(verifiers, v)
	}
	n, err := note.Open([]byte(text), note.VerifierList(verifiers...))
	testenv.Must(t, err, "open the served checkpoint")
	if len(n.Sigs) != 3 {
		t.Fatalf("the served checkpoint verifies with %d signatures, want the log's and 2 cosignatures:\n%s", len(n.Sigs), text)
	}
	// A tlog-proof from the API verifies offline with the log's key and
	// both witnesses' keys (quorum 2); without one of them it does not meet
	// a 2-of-2 policy.
	pda := pdaAt(t, le, 3)
	res, proof := rawGet(t, node.URL+"/attestations/"+pda+"/proof?format=tlog-proof", "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("tlog-proof: %d %s", res.StatusCode, proof)
	}
	pp, err := logformat.ParseProof(proof)
	testenv.Must(t, err, "parse the tlog-proof")
	policy := logformat.ProofPolicy{Log: []note.Verifier{le.key.Verifier}, Quorum: 2}
	for _, w := range ws {
		v, _ := logformat.ParseCosignatureKey(w.VerifierKey)
		policy.Witnesses = append(policy.Witnesses, v)
	}
	got, err := logformat.VerifyProof(pp, nil, policy)
	if err != nil || got.Index != 3 || len(got.Witnesses) != 2 {
		t.Fatalf("the tlog-proof does not verify with both real witnesses: %+v %v", got, err)
	}
	// The witnesses' own state agrees: each holds the size it cosigned.
	for _, w := range ws {
		res, err := http.Get("http://" + w.Addr + "/")
		testenv.Must(t, err, "witness page")
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), sprintf("(size %d,", want)) {
			t.Fatalf("witness %s does not hold size %d:\n%s", w.Name, want, b)
		}
	}
	// /health: witnessed by 2 of 2.
	var h struct {
		Status string
		Log    struct {
			Size, Newest int64
			Quorum       int
			WitnessedBy  []string
			Witnesses    []struct {
				Name  string
				Size  int64
				Error string
			}
		}
	}
	node.Get(t, "/health").JSON(t, &h)
	if h.Log.Size != want || h.Log.Quorum != 2 || len(h.Log.WitnessedBy) != 2 || len(h.Log.Witnesses) != 2 || h.Log.Witnesses[0].Size != want {
		t.Fatalf("/health's log: %+v", h.Log)
	}
	for _, w := range ws {
		if got := testutil.ToFloat64(mustCounter(t, reg, "attestd_log_witness_size", w.Name)); int64(got) != want {
			t.Fatalf("attestd_log_witness_size{witness=%q} = %v, want %d", w.Name, got, want)
		}
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name, witness string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	testenv.Must(t, err, "gather")
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "witness" && l.GetValue() == witness {
					g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
					if m.Gauge != nil {
						g.Set(m.Gauge.GetValue())
					} else if m.Counter != nil {
						g.Set(m.Counter.GetValue())
					}
					return g
				}
			}
		}
	}
	t.Fatalf("no %s{witness=%q}", name, witness)
	return nil
}

// TestWitnessShownAForkRefuses: a witness shown another history of the
// log (a fork signed with the same key, under the same origin) refuses to
// cosign the real one (its consistency proof cannot verify against what
// it holds: 422), and the log says so (an error log line, the refusal
// metric, the witness's state in PostgreSQL); the other witness cosigns.
// With a quorum of 2 no checkpoint is served; with 1, the other's is.
func TestWitnessShownAForkRefuses(t *testing.T) {
	le := newLogEnv(t, 2)
	ws := startWitnesses(t, le, 2)
	// The fork: 40 leaves of its own, signed with the log's key, shown
	// to the second witness only.
	forkSize := int64(40)
	var stored []tlog.Hash
	for i := range forkSize {
		leaf := make([]byte, 64)
		_, _ = rand.Read(leaf)
		hs, err := tlog.StoredHashes(i, leaf, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(ids))
			for j, id := range ids {
				out[j] = stored[id]
			}
			return out, nil
		}))
		testenv.Must(t, err, "fork hashes")
		stored = append(stored, hs...)
	}
	root, err := tlog.TreeHash(forkSize, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for j, id := range ids {
			out[j] = stored[id]
		}
		return out, nil
	}))
	testenv.Must(t, err, "fork root")
	forked, err := logformat.Checkpoint{Origin: le.key.Name, Size: forkSize, Root: root}.Sign(le.key.Signer)
	testenv.Must(t, err, "sign the fork")
	res, err := http.Post(ws[1].URL, "text/plain", strings.NewReader("old 0\n\n"+forked))
	testenv.Must(t, err, "show the fork")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(string(b), "— "+ws[1].Name+" ") {
		t.Fatalf("the witness did not cosign the fork: %d %s", res.StatusCode, b)
	}

	cfg := le.cfg
	cfg.CheckpointInterval = 100 * time.Millisecond
	cfg.Witnesses, cfg.Quorum = witnessConfig(t, ws), 2
	strict := le.startNode(t, cfg)
	one := cfg
	one.Quorum = 1
	lenient := le.startNode(t, one)
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	runAppender(t, le, cfg, &logs, reg)
	le.bulk(t, 100, attestation.Finalized)

	// The refusal is logged, then recorded (what /health reads): wait for both.
	recorded := sprintf(`SELECT count(*) FROM log_witnesses WHERE witness = '%s' AND coalesce(error, '') <> ''`, ws[1].VerifierKey)
	testenv.WaitForState(t, "the refusal logged and recorded, and the real checkpoint cosigned by the first witness", testenv.Patience,
		testenv.Every(50*time.Millisecond, func() (bool, string) {
			logged, rec := strings.Contains(logs.String(), "REFUSED"), le.count(t, recorded)
			cosigned := le.count(t, `SELECT count(*) FROM log_checkpoints WHERE size = 100 AND cosignatures = 1`)
			return logged && rec > 0 && cosigned > 0, sprintf("refusal logged %t, recorded %d, cosigned once %d; logs:\n%s", logged, rec, cosigned, logs.String())
		}))
	var werr string
	testenv.Must(t, le.st.Pool().QueryRow(context.Background(), `SELECT coalesce(error, '') FROM log_witnesses WHERE witness = $1`,
		ws[1].VerifierKey).Scan(&werr), "witness state")
	if !strings.Contains(werr, "422") || !strings.Contains(werr, "inconsistent") {
		t.Fatalf("the refusing witness's recorded state: %q", werr)
	}
	if got := testutil.ToFloat64(mustCounterLabels(t, reg, "attestd_log_witness_refusals_total", ws[1].Name, "inconsistent")); got < 1 {
		t.Fatalf("refusals metric: %v", got)
	}
	if le.count(t, sprintf(`SELECT count(*) FROM log_cosignatures WHERE witness = '%s'`, ws[1].VerifierKey)) != 0 {
		t.Fatal("the witness shown a fork cosigned the real log")
	}
	// Fail-closed: with both required, nothing is served; with one, the
	// first witness's cosigned checkpoint is.
	if r := strict.GetRoot(t, "/log/checkpoint"); r.Status != http.StatusServiceUnavailable || !strings.Contains(r.ErrorMessage(), "witnesses") {
		t.Fatalf("quorum 2 with one witness refusing: %d %s", r.Status, r.Body)
	}
	text := waitCheckpoint(t, lenient, 100)
	if !strings.Contains(text, "\n— "+ws[0].Name+" ") || strings.Contains(text, "\n— "+ws[1].Name+" ") {
		t.Fatalf("quorum 1: the served checkpoint's cosignatures:\n%s", text)
	}
	// /health names the refusal.
	var h struct {
		Log struct {
			WitnessedBy []string
			Witnesses   []struct{ Name, Error string }
		}
	}
	lenient.Get(t, "/health").JSON(t, &h)
	if len(h.Log.WitnessedBy) != 1 || h.Log.WitnessedBy[0] != ws[0].Name || len(h.Log.Witnesses) != 2 || !strings.Contains(h.Log.Witnesses[1].Error, "inconsistent") {
		t.Fatalf("/health's log with a refusing witness: %+v", h.Log)
	}
	_ = base64.StdEncoding
}

func mustCounterLabels(t *testing.T, reg *prometheus.Registry, name, witness, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	testenv.Must(t, err, "gather")
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			var w, r string
			for _, l := range m.Label {
				switch l.GetName() {
				case "witness":
					w = l.GetValue()
				case "reason":
					r = l.GetValue()
				}
			}
			if w == witness && r == reason {
				g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
				g.Set(m.Counter.GetValue())
				return g
			}
		}
	}
	t.Fatalf("no %s{witness=%q,reason=%q}", name, witness, reason)
	return nil
}
