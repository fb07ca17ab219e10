package app_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDrainFailsHealthWhileServing: once its context ends, a node with a
// drain answers /health 503 "draining" (in the Health schema) while it
// still answers every other request, each closing its connection; a
// second signal (SkipDrain) ends the drain and the node stops.
func TestDrainFailsHealthWhileServing(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 20})
	base := env.StartNode(t, apptest.NodeOptions{})
	reg := prometheus.NewRegistry()
	api := app.New(app.Deps{Store: base.Store, Cache: base.Cache, Logger: apptest.Logger(), Registerer: reg})
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	skip := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- api.ListenWith(ctx, addr, app.ListenOptions{Drain: time.Hour, SkipDrain: skip, Grace: 5 * time.Second})
	}()
	node := &apptest.Node{URL: "http://" + addr + httpapi.Prefix, Root: "http://" + addr, API: api}
	testenv.WaitFor(t, "the node listens", 30*time.Second, func() bool { return healthStatus(node) == 200 })

	var h app.Health
	r := node.Get(t, "/health")
	r.JSON(t, &h)
	if r.Status != 200 || h.Status == "draining" || api.Draining() {
		t.Fatalf("before the signal: %d %s", r.Status, r.Body)
	}
	if s := drainingSeconds(t, reg); s != 0 {
		t.Fatalf("attestd_http_draining_seconds before the signal: %v, want 0", s)
	}
	stop()
	testenv.WaitFor(t, "health says draining", 30*time.Second, func() bool { return healthStatus(node) == 503 })
	r = node.Get(t, "/health") // validated against the OpenAPI document
	r.JSON(t, &h)
	if h.Status != "draining" || len(h.Reasons) == 0 || !strings.HasPrefix(h.Reasons[0], "draining:") || h.Postgres != "ok" {
		t.Fatalf("draining health: %d %s", r.Status, r.Body)
	}
	time.Sleep(20 * time.Millisecond)
	if s := drainingSeconds(t, reg); s <= 0 || s > 30 {
		t.Errorf("attestd_http_draining_seconds while draining: %v, want the time since the signal", s)
	}
	for _, path := range []string{"/stats", "/attestations?limit=2"} {
		if r := node.Get(t, path); r.Status != 200 {
			t.Fatalf("GET %s while draining: %d %s", path, r.Status, r.Body)
		}
		res, err := http.Get(node.URL + path)
		testenv.Must(t, err, "GET %s", path)
		res.Body.Close()
		if !res.Close {
			t.Errorf("GET %s while draining: the answer keeps its connection open (want Connection: close)", path)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the node stopped during its drain: %v", err)
	default:
	}
	close(skip)
	select {
	case err := <-done:
		testenv.Must(t, err, "listen")
	case <-time.After(30 * time.Second):
		t.Fatal("a second signal did not end the drain")
	}
}

// TestNoDrainStopsAtOnce: without a drain, the end of the context shuts
// the node down (as before drains existed).
func TestNoDrainStopsAtOnce(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	base := env.StartNode(t, apptest.NodeOptions{})
	api := app.New(app.Deps{Store: base.Store, Cache: base.Cache, Logger: apptest.Logger()})
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Listen(ctx, addr, 5*time.Second) }()
	node := &apptest.Node{URL: "http://" + addr + httpapi.Prefix, Root: "http://" + addr, API: api}
	testenv.WaitFor(t, "the node listens", 30*time.Second, func() bool { return healthStatus(node) == 200 })
	stop()
	select {
	case err := <-done:
		testenv.Must(t, err, "listen")
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not stop")
	}
	if api.Draining() {
		t.Error("a node without a drain says it drains")
	}
}

func healthStatus(n *apptest.Node) int {
	res, err := httpGet(n.URL + "/health")
	if err != nil {
		return 0
	}
	return res
}

// httpGet is the status of a GET (a fresh connection each time).
func httpGet(url string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// drainingSeconds reads attestd_http_draining_seconds from reg.
func drainingSeconds(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	testenv.Must(t, err, "gather")
	for _, mf := range mfs {
		if mf.GetName() == "attestd_http_draining_seconds" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("attestd_http_draining_seconds is not registered")
	return 0
}
