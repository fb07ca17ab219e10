package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// harness is a node serving the stream over a seeded database, and a
// writer applying attestations as the indexer does (store.Apply; its
// cache announces each commit on the epoch channel).
type harness struct {
	t     *testing.T
	env   *apptest.Env
	node  *apptest.Node
	hub   *Hub
	h     *Handler
	reg   *prometheus.Registry
	mu    sync.Mutex
	slot  uint64
	nseed uint64
}

func newHarness(t *testing.T, cfg Config) *harness { return newHarnessWith(t, cfg, nil) }

// newHarnessWith is newHarness with the node's dependencies adjusted
// (middleware, connection cap) by configure.
func newHarnessWith(t *testing.T, cfg Config, configure func(*apptest.Env, *app.Deps)) *harness {
	t.Helper()
	env := apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 20})
	x := &harness{t: t, env: env, reg: prometheus.NewRegistry(), slot: 1 << 30}
	st, err := store.Open(context.Background(), env.DatabaseURL, store.Options{MaxConns: 8})
	testenv.Must(t, err, "open hub store")
	t.Cleanup(st.Close)
	x.hub = NewHub(HubDeps{Store: st, Redis: apptest.NewRedis(t, env.RedisURL), Prefix: env.Prefix, Config: cfg, Logger: apptest.Logger()})
	t.Cleanup(x.hub.Close)
	x.h = New(Deps{Hub: x.hub, Registerer: x.reg})
	x.node = env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) {
			d.Stream = x.h.Serve
			if configure != nil {
				configure(env, d)
			}
		}})
	x.waitReady()
	return x
}

func (x *harness) waitReady() {
	x.t.Helper()
	testenv.WaitFor(x.t, "hub ready", testenv.Patience, func() bool { _, ok := x.hub.position(); return ok })
}

// add applies n new attestations (of agent i % agents) in one batch and
// returns them as the list shows them.
func (x *harness) add(n int, agent int, commitment attestation.Commitment) []attestation.Attestation {
	x.t.Helper()
	x.mu.Lock()
	x.nseed++
	agents := []seed.Agent{x.env.Seeded.Agents[agent%len(x.env.Seeded.Agents)]}
	recs := seed.NewAttestations(agents, n, time.Now(), x.slot, x.nseed)
	for i := range recs {
		recs[i].Commitment = commitment
		x.slot = max(x.slot, recs[i].Slot)
	}
	x.mu.Unlock()
	if _, err := x.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		x.t.Fatalf("apply: %v", err)
	}
	out := make([]attestation.Attestation, len(recs))
	for i := range recs {
		out[i] = recs[i].API()
	}
	return out
}

// event is one server-sent event.
type event struct {
	Event, ID, Data string
	Comment         bool
}

// sseReader reads events from a stream's body.
type sseReader struct {
	resp  *http.Response
	br    *bufio.Reader
	retry string
}

func (x *harness) open(query string, header http.Header) (*sseReader, *http.Response) {
	x.t.Helper()
	req, err := http.NewRequest(http.MethodGet, x.node.URL+"/attestations/stream"+query, nil)
	testenv.Must(x.t, err, "request")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := streamClient.Do(req)
	testenv.Must(x.t, err, "open stream")
	x.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	return &sseReader{resp: resp, br: bufio.NewReader(resp.Body)}, resp
}

var streamClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}

// next reads the next event (comments included), or io.EOF at the end.
func (r *sseReader) next() (event, error) {
	var e event
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && seen {
				return e, io.ErrUnexpectedEOF
			}
			return e, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return e, nil
			}
			continue
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			e.Comment = true
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "event":
			e.Event = v
		case "id":
			e.ID = v
		case "data":
			if e.Data != "" {
				e.Data += "\n"
			}
			e.Data += v
		case "retry":
			r.retry = v
		}
	}
}

// nextEvent skips comments and the retry line.
func (r *sseReader) nextEvent() (event, error) {
	for {
		e, err := r.next()
		if err != nil || (!e.Comment && (e.Event != "" || e.Data != "")) {
			return e, err
		}
	}
}

func (r *sseReader) mustNext(t *testing.T) event {
	t.Helper()
	done := make(chan struct{})
	var e event
	var err error
	go func() { e, err = r.nextEvent(); close(done) }()
	select {
	case <-done:
	case <-time.After(testenv.Patience):
		r.resp.Body.Close()
		<-done
		t.Fatalf("no event within %s", testenv.Patience)
	}
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	return e
}

func listItem(t *testing.T, a attestation.Attestation) string {
	t.Helper()
	b, err := json.Marshal(a)
	testenv.Must(t, err, "marshal")
	return string(b)
}

func cursorOf(a attestation.Attestation) string {
	return httpapi.EncodeCursor(&store.Cursor{Timestamp: a.Timestamp.Time, Slot: a.Slot, PDA: a.PDA})
}

// rawConn opens a TCP connection and sends a stream request on it.
func (x *harness) rawConn(query string, extra string) net.Conn {
	x.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(x.node.Root, "http://"))
	testenv.Must(x.t, err, "dial")
	x.t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "GET /api/v1/attestations/stream%s HTTP/1.1\r\nHost: x\r\n%s\r\n", query, extra)
	testenv.Must(x.t, err, "send")
	return c
}
