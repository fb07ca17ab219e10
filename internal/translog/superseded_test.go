package translog_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// sent is one add-checkpoint request as a witness received it.
type sent struct {
	old, size int64
	status    int
}

// holdingProxy forwards add-checkpoint requests to a real witness,
// recording each; the first request for a size above 0 is held until
// release returns true (polled), so checkpoints are signed while that
// call is in flight.
type holdingProxy struct {
	target  string
	release func() bool
	mu      sync.Mutex
	log     []sent
	held    int64 // the size of the request held (0: none yet)
	srv     *httptest.Server
}

func newHoldingProxy(t *testing.T, target string, release func() bool) *holdingProxy {
	p := &holdingProxy{target: target, release: release}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *holdingProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	old, size := parseAddCheckpoint(body)
	p.mu.Lock()
	hold := p.held == 0 && size > 0
	if hold {
		p.held = size
	}
	p.mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); hold && !p.release() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	res, err := http.Post(p.target, r.Header.Get("Content-Type"), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	p.mu.Lock()
	p.log = append(p.log, sent{old: old, size: size, status: res.StatusCode})
	p.mu.Unlock()
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(answer)
}

func (p *holdingProxy) requests() []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sent(nil), p.log...)
}

// parseAddCheckpoint reads the old size and the checkpoint's size of a
// C2SP tlog-witness add-checkpoint body (-1 when absent).
func parseAddCheckpoint(b []byte) (old, size int64) {
	old, size = -1, -1
	head, note, _ := strings.Cut(string(b), "\n\n")
	if v, ok := strings.CutPrefix(head, "old "); ok {
		first, _, _ := strings.Cut(v, "\n")
		old, _ = strconv.ParseInt(first, 10, 64)
	}
	lines := strings.SplitN(note, "\n", 3)
	if len(lines) > 1 {
		size, _ = strconv.ParseInt(lines[1], 10, 64)
	}
	return old, size
}

// TestSupersededCheckpointsWhileAWitnessCallIsInFlight: the decision for
// checkpoints signed while a witness works on an earlier one is to send
// that witness the newest checkpoint, with the consistency proof from the
// size it last cosigned, and never the superseded ones. One of two real
// litewitnesses is held on its first checkpoint until two more have been
// signed; then it is sent the newest with "old" its cosigned size (which
// it accepts: the proof verifies), never a superseded size, never a size
// below one it was sent; the other witness is not delayed; the newest
// checkpoint ends cosigned by both and served.
func TestSupersededCheckpointsWhileAWitnessCallIsInFlight(t *testing.T) {
	le := newLogEnv(t, 2)
	ws := startWitnesses(t, le, 2)
	cfg := le.cfg
	cfg.CheckpointInterval = 100 * time.Millisecond
	cfg.Witnesses, cfg.Quorum = witnessConfig(t, ws), 2
	var proxy *holdingProxy
	proxy = newHoldingProxy(t, cfg.Witnesses[0].URL, func() bool {
		proxy.mu.Lock()
		held := proxy.held
		proxy.mu.Unlock()
		return le.count(t, sprintf(`SELECT count(*) FROM log_checkpoints WHERE size > %d`, held)) >= 2
	})
	cfg.Witnesses[0].URL = proxy.srv.URL + "/add-checkpoint"
	node := le.startNode(t, cfg)
	runAppender(t, le, cfg, nil, prometheus.NewRegistry())
	// Checkpoints keep coming while the first call is held.
	for round := range 6 {
		le.bulk(t, 40+round*13, attestation.Finalized)
		time.Sleep(250 * time.Millisecond)
	}
	want := le.count(t, `SELECT count(*) FROM attestations WHERE finalized`)
	testenv.WaitForState(t, sprintf("the newest checkpoint (size %d) cosigned by both witnesses", want), testenv.Patience, testenv.Every(50*time.Millisecond, func() (bool, string) {
		done := le.count(t, sprintf(`SELECT count(*) FROM log_checkpoints WHERE size = %d AND cosignatures = 2`, want)) > 0
		return done, sprintf("the held witness was sent %+v", proxy.requests())
	}))
	waitCheckpoint(t, node, want)

	reqs := proxy.requests()
	if len(reqs) < 2 {
		t.Fatalf("the held witness got %d requests, want the held one and the newest after it: %+v", len(reqs), reqs)
	}
	held := proxy.held
	var heldAt = -1
	for i, r := range reqs {
		if r.size == held {
			heldAt = i
			break
		}
	}
	if heldAt < 0 || reqs[heldAt].status != http.StatusOK {
		t.Fatalf("the held request (size %d) was not cosigned: %+v", held, reqs)
	}
	next := reqs[heldAt+1]
	// Signed while the call was in flight: at least two checkpoints
	// between the held size and the next one sent were superseded.
	superseded := le.count(t, sprintf(`SELECT count(*) FROM log_checkpoints WHERE size > %d AND size < %d`, held, next.size))
	if superseded < 1 {
		t.Fatalf("no checkpoint was superseded while the call was held (held %d, next sent %d): the test proves nothing", held, next.size)
	}
	if next.old != held || next.status != http.StatusOK {
		t.Fatalf("after the held call the witness was sent %+v, want the newest with old %d, cosigned (200)", next, held)
	}
	sizes := map[int64]bool{}
	for i, r := range reqs {
		if r.status != http.StatusOK {
			t.Errorf("request %d %+v not accepted by the witness", i, r)
		}
		if i > 0 && r.size <= reqs[i-1].size {
			t.Errorf("request %d for size %d after one for %d: a witness is only ever sent newer checkpoints", i, r.size, reqs[i-1].size)
		}
		if i > 0 && r.old != reqs[i-1].size {
			t.Errorf("request %d has old %d, want %d, the size the witness last cosigned", i, r.old, reqs[i-1].size)
		}
		sizes[r.size] = true
	}
	// The superseded ones were never sent to the held witness, nor
	// cosigned by it.
	rows, err := le.st.Pool().Query(t.Context(), sprintf(`SELECT size FROM log_checkpoints WHERE size > %d AND size < %d`, held, next.size))
	testenv.Must(t, err, "superseded sizes")
	defer rows.Close()
	for rows.Next() {
		var s int64
		testenv.Must(t, rows.Scan(&s), "scan")
		if sizes[s] {
			t.Errorf("superseded checkpoint %d was sent to the held witness", s)
		}
		if n := le.count(t, sprintf(`SELECT count(*) FROM log_cosignatures WHERE size = %d AND witness = '%s'`, s, cfg.Witnesses[0].VerifierKey)); n != 0 {
			t.Errorf("superseded checkpoint %d has a cosignature by the held witness", s)
		}
	}
}
