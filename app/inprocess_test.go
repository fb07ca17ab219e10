package app_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	dto "github.com/prometheus/client_model/go"
)

// TestInProcessRequestsAreTimed: a request the node makes of itself (the
// remote MCP endpoint's tools) is timed from when it was made, not from
// a read that never happened (the zero time: a duration of centuries).
func TestInProcessRequestsAreTimed(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 3})
	node := env.StartNode(t, apptest.NodeOptions{})
	node.Get(t, "/stats") // served: Fiber has built its routes (a node's tools call it only then)
	hc := &http.Client{Transport: &inprocess.Transport{Handler: node.API.InProcess()}}
	req, err := http.NewRequestWithContext(inprocess.WithPeer(context.Background(), netip.MustParseAddr("203.0.113.9")),
		http.MethodGet, node.URL+"/stats", nil)
	testenv.Must(t, err, "request")
	res, err := hc.Do(req)
	testenv.Must(t, err, "in-process GET /stats")
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("in-process GET /stats: %d %s", res.StatusCode, b)
	}
	mfs, err := node.Reg.Gather()
	testenv.Must(t, err, "gather")
	var sum float64
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != "attestd_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabel(m, "route", "/api/v1/stats") {
				sum, n = sum+m.GetHistogram().GetSampleSum(), n+m.GetHistogram().GetSampleCount()
			}
		}
	}
	if n != 2 || sum <= 0 || sum > 10 {
		t.Fatalf("GET /stats in process: %d observations summing %v s, want two (over HTTP, then in process) of a few milliseconds", n, sum)
	}
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
