package translog

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The cosigner submits each new checkpoint to every witness (C2SP
// tlog-witness add-checkpoint), with the consistency proof from the size
// that witness last cosigned, and stores the cosignatures it returns. It
// runs beside the appender while it leads, one goroutine per witness: the
// appender only tells it a checkpoint was signed (a channel send that
// never waits), so no witness's latency or failure slows appending, and
// a slow witness never delays the others. A witness that falls behind is
// sent the newest checkpoint, never the ones it missed.

// witnessTimeout bounds one add-checkpoint call.
const witnessTimeout = 10 * time.Second

// Backoff after a failed call: from witnessBackoffMin, doubling, at most
// witnessBackoffMax (a refusal waits the most: a new checkpoint will not
// change its mind before the operator looks).
const (
	witnessBackoffMin = 200 * time.Millisecond
	witnessBackoffMax = 30 * time.Second
)

// maxWitnessAnswer bounds a witness's answer (a few signature lines).
const maxWitnessAnswer = 16 << 10

type cosigner struct {
	st      *store.Store
	origin  string
	keys    []Key
	log     *slog.Logger
	client  *http.Client
	m       cosignerMetrics
	mu      sync.Mutex
	latest  store.LogCheckpoint // the newest checkpoint signed
	wake    []chan struct{}     // one per witness
	witness []Witness
}

type cosignerMetrics struct {
	cosigned *prometheus.CounterVec
	refused  *prometheus.CounterVec
	failed   *prometheus.CounterVec
	size     *prometheus.GaugeVec
	latency  prometheus.Histogram
}

func newCosignerMetrics() cosignerMetrics {
	return cosignerMetrics{
		cosigned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_log_witness_cosignatures_total",
			Help: "checkpoints each witness cosigned"}, []string{"witness"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_log_witness_refusals_total",
			Help: "checkpoints a witness refused to cosign, by reason (inconsistent: it saw another history; forbidden: it does not know the log's key; unknown_log; bad_request; ahead: it cosigned a larger tree than this log has)"},
			[]string{"witness", "reason"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_log_witness_errors_total",
			Help: "add-checkpoint calls that failed without an answer (network, 5xx, a cosignature that does not verify)"}, []string{"witness"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "attestd_log_witness_size",
			Help: "the tree size each witness last cosigned"}, []string{"witness"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_log_witness_cosign_seconds",
			Help:    "from a checkpoint's signature to a witness's cosignature of it",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
	}
}

func newCosigner(st *store.Store, cfg Config, log *slog.Logger, m cosignerMetrics) *cosigner {
	c := &cosigner{st: st, origin: cfg.Origin(), keys: cfg.Keys(), log: log, witness: cfg.Witnesses, m: m,
		client: &http.Client{Timeout: witnessTimeout}}
	for range cfg.Witnesses {
		c.wake = append(c.wake, make(chan struct{}, 1))
	}
	return c
}

// signed tells every witness's goroutine of a new checkpoint; it never
// waits.
func (c *cosigner) signed(cp store.LogCheckpoint) {
	c.mu.Lock()
	if cp.Size > c.latest.Size || c.latest.Note == "" {
		c.latest = cp
	}
	c.mu.Unlock()
	for _, w := range c.wake {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (c *cosigner) newest() store.LogCheckpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// run submits checkpoints to every witness until ctx ends.
func (c *cosigner) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range c.witness {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.follow(ctx, i)
		}()
	}
	wg.Wait()
}

// follow keeps witness i up to date with the newest checkpoint.
func (c *cosigner) follow(ctx context.Context, i int) {
	w := c.witness[i]
	known, err := c.st.LogWitnessSize(ctx, c.origin, w.VerifierKey)
	if err != nil && ctx.Err() == nil {
		c.log.Warn("log witness: cannot read the size it last cosigned; asking it", "witness", w.Name, "err", err)
	}
	c.m.size.WithLabelValues(w.Name).Set(float64(known))
	backoff := time.Duration(0)
	conflicts := 0
	for {
		cp := c.newest()
		if cp.Note == "" || cp.Size <= known {
			// Nothing newer than what this witness cosigned: wait for the
			// next checkpoint (the timer only guards a lost wake).
			select {
			case <-ctx.Done():
				return
			case <-c.wake[i]:
			case <-time.After(5 * time.Second):
			}
			continue
		}
		size, err := c.submit(ctx, w, cp, known)
		var conflict *witnessConflict
		if errors.As(err, &conflict) && conflict.size == cp.Size {
			// It cosigned this very checkpoint and the answer was lost:
			// the same size again gets the cosignature again.
			size, err = c.submit(ctx, w, cp, cp.Size)
		}
		switch {
		case err == nil:
			known, backoff, conflicts = size, 0, 0
			continue
		case ctx.Err() != nil:
			return
		}
		if errors.As(err, &conflict) && conflict.size != known && conflict.size < cp.Size && conflicts < 3 {
			// The witness holds another size than we thought (a restart,
			// a lost answer): from that size, at once.
			known = conflict.size
			conflicts++
			continue
		}
		conflicts = 0
		backoff = nextBackoff(backoff, err)
		c.note(ctx, w, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

func nextBackoff(cur time.Duration, err error) time.Duration {
	var r *witnessRefusal
	if errors.As(err, &r) {
		return witnessBackoffMax
	}
	next := max(witnessBackoffMin, cur*2)
	next = min(next, witnessBackoffMax)
	return next/2 + rand.N(next/2+1) // jitter: witnesses shared by many logs
}

// note records a failure: the log says so (a refusal loudly: it may be a
// witness that saw another history of this log), in its metrics and in
// PostgreSQL, where /health reads it.
func (c *cosigner) note(ctx context.Context, w Witness, err error) {
	var r *witnessRefusal
	var conflict *witnessConflict
	switch {
	case errors.As(err, &r):
		c.m.refused.WithLabelValues(w.Name, r.reason).Inc()
		if r.reason == "inconsistent" {
			c.log.Error("log witness REFUSED to cosign: it holds a checkpoint of this log that this log's tree does not extend (another history under this origin and key?)",
				"witness", w.Name, "status", r.status, "answer", r.body)
		} else {
			c.log.Error("log witness refused to cosign", "witness", w.Name, "reason", r.reason, "status", r.status, "answer", r.body)
		}
	case errors.As(err, &conflict):
		c.m.refused.WithLabelValues(w.Name, "ahead").Inc()
		c.log.Error("log witness has cosigned a larger tree of this log than this log holds (a fork, or a database restored from backup?)",
			"witness", w.Name, "witness_size", conflict.size)
	default:
		c.m.failed.WithLabelValues(w.Name).Inc()
		c.log.Warn("log witness unreachable; will try again", "witness", w.Name, "err", err)
	}
	if serr := c.st.LogWitnessFailed(ctx, c.origin, w.VerifierKey, err.Error()); serr != nil && ctx.Err() == nil {
		c.log.Warn("log witness: cannot record the failure", "witness", w.Name, "err", serr)
	}
}

// witnessConflict is a 409: the witness's latest cosigned size.
type witnessConflict struct{ size int64 }

func (e *witnessConflict) Error() string {
	return fmt.Sprintf("the witness last cosigned size %d (409)", e.size)
}

// witnessRefusal is an answer that says no (403, 404, 400, 422).
type witnessRefusal struct {
	status int
	reason string
	body   string
}

func (e *witnessRefusal) Error() string {
	return fmt.Sprintf("refused (%d %s): %s", e.status, e.reason, e.body)
}

// submit sends cp to w with the proof from old, checks the cosignature
// and stores it; it returns the size now cosigned.
func (c *cosigner) submit(ctx context.Context, w Witness, cp store.LogCheckpoint, old int64) (int64, error) {
	body, err := c.request(ctx, cp, old)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, witnessTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	res, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxWitnessAnswer+1))
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	if len(answer) > maxWitnessAnswer {
		return 0, fmt.Errorf("an answer of more than %d bytes", maxWitnessAnswer)
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		size, ok := logformat.Decimal(strings.TrimSuffix(string(answer), "\n"), 1<<62)
		if !ok && string(answer) == "0\n" {
			size, ok = 0, true
		}
		if !ok {
			return 0, fmt.Errorf("409 without a tree size: %q", excerpt.Of(string(answer), 128))
		}
		return 0, &witnessConflict{size: size}
	case http.StatusUnprocessableEntity:
		return 0, &witnessRefusal{status: res.StatusCode, reason: "inconsistent", body: excerpt.Of(strings.TrimSpace(string(answer)), 128)}
	case http.StatusForbidden:
		return 0, &witnessRefusal{status: res.StatusCode, reason: "forbidden", body: excerpt.Of(strings.TrimSpace(string(answer)), 128)}
	case http.StatusNotFound:
		return 0, &witnessRefusal{status: res.StatusCode, reason: "unknown_log", body: excerpt.Of(strings.TrimSpace(string(answer)), 128)}
	case http.StatusBadRequest:
		return 0, &witnessRefusal{status: res.StatusCode, reason: "bad_request", body: excerpt.Of(strings.TrimSpace(string(answer)), 128)}
	default:
		return 0, fmt.Errorf("HTTP %d: %s", res.StatusCode, excerpt.Of(strings.TrimSpace(string(answer)), 128))
	}
	line, err := cosignatureLine(cp.Note, answer, w)
	if err != nil {
		return 0, err
	}
	if err := c.st.LogCosign(ctx, c.origin, cp.Size, w.VerifierKey, line); err != nil {
		return 0, err
	}
	c.m.cosigned.WithLabelValues(w.Name).Inc()
	c.m.size.WithLabelValues(w.Name).Set(float64(cp.Size))
	c.m.latency.Observe(time.Since(cp.SignedAt).Seconds())
	return cp.Size, nil
}

// request is an add-checkpoint body: "old N", the consistency proof from
// N to cp's size, a blank line, the checkpoint as the log signed it.
func (c *cosigner) request(ctx context.Context, cp store.LogCheckpoint, old int64) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("old " + strconv.FormatInt(old, 10) + "\n")
	if old > 0 && old < cp.Size {
		proof, err := tlog.ProveTree(cp.Size, old, c.st.LogHashReader(ctx))
		if err != nil {
			return nil, fmt.Errorf("consistency proof %d to %d: %w", old, cp.Size, err)
		}
		for _, h := range proof {
			b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
		}
	}
	b.WriteString("\n")
	b.WriteString(cp.Note)
	return b.Bytes(), nil
}

// cosignatureLine finds w's cosignature in a witness's answer (signature
// lines; others are ignored, as the spec says) and checks it over the
// checkpoint's text: the one line to keep.
func cosignatureLine(signed string, answer []byte, w Witness) (string, error) {
	text, _, ok := strings.Cut(signed, "\n\n")
	if !ok {
		return "", errors.New("the checkpoint is not a signed note")
	}
	for _, line := range strings.SplitAfter(string(answer), "\n") {
		if !strings.HasPrefix(line, "— "+w.Name+" ") || !strings.HasSuffix(line, "\n") {
			continue
		}
		n, err := note.Open([]byte(text+"\n\n"+line), note.VerifierList(w.Verifier))
		if err == nil && len(n.Sigs) == 1 {
			return line, nil
		}
	}
	return "", fmt.Errorf("no cosignature by %s that verifies in its answer: %q", w.Name, excerpt.Of(string(answer), 128))
}
