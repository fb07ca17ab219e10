package app_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/otlptest"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/gofiber/fiber/v2"
)

// servePath is one request of the hot paths, as bytes on the wire, with
// the status it must get.
type servePath struct {
	name string
	app  *fiber.App
	req  []byte
	want string
}

// hotPaths starts a node over a small seeded database and returns the
// requests bench/edge measures (conditional GETs of a finalized
// attestation and of a list, plain and gzip, and a plain GET), after one
// request of each so that every answer is in the node's memory; plus the
// bare Fiber yardsticks: the JSON handler bench/edge compares with, and a
// handler that writes the same 304 as the node without any work (the
// floor).
func hotPaths(tb testing.TB) []servePath { return hotPathsOf(tb, apptest.NodeOptions{}) }

// hotPathsOf is hotPaths on a node started with opt.
func hotPathsOf(tb testing.TB, opt apptest.NodeOptions) []servePath {
	env := apptest.NewEnv(tb, apptest.Options{Agents: 3, Attestations: 40})
	node := env.StartNode(tb, opt)
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	body := map[string]any{"status": "ok", "version": "baseline", "n": 42}
	bare.Get("/json", func(c *fiber.Ctx) error { return c.JSON(body) })

	var page struct {
		Data []struct {
			PDA        string `json:"pda"`
			Commitment string `json:"commitment"`
		} `json:"data"`
	}
	node.Get(tb, "/attestations?limit=100").JSON(tb, &page)
	detail := ""
	for _, at := range page.Data {
		if at.Commitment == "finalized" {
			detail = "/api/v1/attestations/" + at.PDA
			break
		}
	}
	if detail == "" {
		tb.Fatal("no finalized attestation seeded")
	}
	list := "/api/v1/attestations?limit=20"
	etag := func(path, enc string) string {
		r := fetch(tb, node, "GET", strings.TrimPrefix(path, "/api/v1"), map[string]string{"Accept-Encoding": enc})
		if r.Status != 200 {
			tb.Fatalf("%s: %d", path, r.Status)
		}
		return r.Header.Get("ETag")
	}
	request := func(path string, header ...string) []byte {
		s := "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: wrk\r\n"
		for _, h := range header {
			s += h + "\r\n"
		}
		return []byte(s + "\r\n")
	}
	detailTag := etag(detail, "identity")
	bare.Get("/304", func(c *fiber.Ctx) error { // the node's 304 of detail, headers and all, from constants
		h := &c.Response().Header
		h.Set("X-Request-Id", "b0f0a08a340b-2abc")
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("Vary", "Accept-Encoding")
		h.Set("Etag", detailTag)
		h.Set("Surrogate-Key", "attestation-"+detail[len("/api/v1/attestations/"):])
		h.Set("Cache-Tag", "attestation-"+detail[len("/api/v1/attestations/"):])
		return c.SendStatus(304)
	})
	bare.Handler() // builds the route tree, as Listen would
	return []servePath{
		{"baseline", bare, request("/json"), "200"},
		{"floor-304", bare, request("/304", "If-None-Match: "+detailTag), "304"},
		{"304-attestation", node.Fiber(), request(detail, "If-None-Match: "+detailTag), "304"},
		{"304-list", node.Fiber(), request(list, "If-None-Match: "+etag(list, "identity")), "304"},
		{"304-list-gzip", node.Fiber(), request(list, "Accept-Encoding: gzip", "If-None-Match: "+etag(list, "gzip")), "304"},
		{"200-attestation", node.Fiber(), request(detail), "200"},
	}
}

// serve pipes n copies of p's request through its server on one
// in-memory connection and checks the answers.
func serve(tb testing.TB, p servePath, n int) {
	conn := &pipeConn{req: p.req, left: n}
	if err := p.app.Server().ServeConn(conn); err != nil {
		tb.Fatal(err)
	}
	if !bytes.HasPrefix(conn.first, []byte("HTTP/1.1 "+p.want)) {
		tb.Fatalf("%s: first answer %q, want status %s", p.name, conn.first, p.want)
	}
	if conn.answers < n {
		tb.Fatalf("%s: %d answers to %d requests", p.name, conn.answers, n)
	}
}

// BenchmarkServe measures the node's own work per request, without the
// kernel: requests piped through fasthttp's server on an in-memory
// connection (parsing, routing, our handlers, writing the answer), against
// the bare Fiber handlers of hotPaths. bench/edge measures the same paths
// over loopback with wrk.
func BenchmarkServe(b *testing.B) {
	for _, p := range hotPaths(b) {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			reportCPU(b, func() { serve(b, p, b.N) })
		})
	}
}

// BenchmarkServeTraced is BenchmarkServe with tracing on, every request
// sampled, exporting over OTLP/HTTP to a receiver on loopback: the cost of
// the server span, the cache lookup's span and their export (compare with
// BenchmarkServe's paths of the same run).
func BenchmarkServeTraced(b *testing.B) {
	otlptest.Start(b).Enable(b, "serve")
	for _, p := range hotPathsOf(b, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Trace = tracing.Middleware() }}) {
		if p.name == "baseline" || p.name == "floor-304" {
			continue // the yardsticks: BenchmarkServe measures them
		}
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			reportCPU(b, func() { serve(b, p, b.N) })
		})
	}
}

// TestHotPathsAllocateNothing: a conditional GET answered from the node's
// memory, and a 200 of a cached attestation, allocate nothing per request
// (they allocated 3 to 6 times before; each allocation is also work for
// the collector on the busiest paths). Not parallel: AllocsPerRun counts
// the process's allocations; the rounding down absorbs a node's
// background work. Under the race detector sync.Pool drops items on
// purpose, so `make test` runs this test again without it (test-plain).
func TestHotPathsAllocateNothing(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts under the race detector mean nothing; make test-plain runs this test")
	}
	const perRun = 200
	for _, p := range hotPaths(t) {
		if p.name == "baseline" || p.name == "floor-304" {
			continue // the yardsticks: not ours
		}
		serve(t, p, perRun) // warm fasthttp's pools
		allocs := testing.AllocsPerRun(5, func() { serve(t, p, perRun) })
		// One connection's own allocations (its reader and writer, when
		// the pools were emptied by a collection) are allowed for; one per
		// request is not.
		if allocs >= perRun/2 {
			t.Errorf("%s: %.0f allocations per %d requests", p.name, allocs, perRun)
		}
	}
}
