package deploy_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/stream"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestEdgeStreamsUnbuffered: through the shipped nginx, a stream's
// heartbeat and a new attestation reach the client as they are written
// (neither buffered nor cached nor compressed).
func TestEdgeStreamsUnbuffered(t *testing.T) {
	f := newFleet(t, fleetOptions{unlimited: func(t *testing.T, env *apptest.Env, deps *app.Deps) func(*app.API) {
		hub := stream.NewHub(stream.HubDeps{Store: deps.Store, Redis: apptest.NewRedis(t, env.RedisURL), Prefix: env.Prefix,
			Config: stream.Config{Heartbeat: 200 * time.Millisecond}, Logger: deps.Logger})
		t.Cleanup(hub.Close)
		deps.Stream = stream.New(stream.Deps{Hub: hub}).Serve
		return nil
	}})
	req, err := http.NewRequest(http.MethodGet, f.edge.URL+httpapi.Prefix+"/attestations/stream", nil)
	testenv.Must(t, err, "request")
	req.Header.Set("Accept-Encoding", "gzip")
	var res *http.Response
	// The nodes' hubs read the log head once they start.
	testenv.WaitForState(t, "the stream past its 503", testenv.Patience, testenv.Every(50*time.Millisecond, func() (bool, string) {
		r, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		testenv.Must(t, err, "open through the edge")
		if r.StatusCode == http.StatusServiceUnavailable {
			r.Body.Close()
			return false, r.Status
		}
		res = r
		return true, ""
	}))
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Content-Encoding") != "" {
		t.Fatalf("through the edge: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Encoding"))
	}
	if c := res.Header.Get("X-Cache-Status"); c != "" {
		t.Fatalf("the edge's cache saw the stream: %s", c)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		br := bufio.NewReader(res.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	next := func(what string, match func(string) bool) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stream ended before %s", what)
				}
				if match(l) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s through the edge within 20 s", what)
			}
		}
	}
	next("retry line", func(l string) bool { return l == "retry: 2000" })
	next("heartbeat", func(l string) bool { return strings.HasPrefix(l, ":") })
	recs := seed.NewAttestations(f.env.Seeded.Agents[:1], 1, time.Now(), 1<<40, 99)
	recs[0].Commitment = attestation.Confirmed
	_, err = f.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs})
	testenv.Must(t, err, "apply")
	next("the new attestation", func(l string) bool { return strings.HasPrefix(l, "data: ") && strings.Contains(l, recs[0].PDA) })
}
