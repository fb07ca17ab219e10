package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
)

// TestEdgeServesLogTiles: the transparency log's tiles, checkpoint and
// proofs pass through deploy/nginx.conf as cacheable answers: repeated
// reads are edge HITs and reach a node once; full tiles say immutable.
func TestEdgeServesLogTiles(t *testing.T) {
	t.Parallel()
	skey, _, err := note.GenerateKey(rand.Reader, "edge.test/log")
	testenv.Must(t, err, "key")
	key, err := translog.ParseKey(skey)
	testenv.Must(t, err, "parse key")
	cfg := translog.Config{Key: key}
	f := newFleet(t, fleetOptions{policy: long, middleware: limiter(t, 1_000_000),
		unlimited: func(t *testing.T, env *apptest.Env, deps *app.Deps) func(*app.API) {
			srv := translog.NewServer(translog.ServerDeps{Store: deps.Store, Cache: deps.Cache, Config: cfg,
				Logger: deps.Logger, Refresh: 20 * time.Millisecond})
			srv.Start(t.Context())
			deps.Unlimited = append(deps.Unlimited, srv.OriginRoutes()...)
			return func(api *app.API) { srv.Routes(api) }
		}})
	// The 400 seeded attestations are finalized: append and sign.
	a, err := translog.NewAppender(translog.AppenderDeps{Store: f.env.Store, Config: cfg, Logger: apptest.Logger()})
	testenv.Must(t, err, "appender")
	for {
		res, err := f.env.Store.LogAppend(context.Background(), 5000)
		testenv.Must(t, err, "append")
		if res.Leaves == 0 {
			break
		}
	}
	cp, _, err := a.SignCheckpoint(context.Background())
	testenv.Must(t, err, "sign")
	if cp.Size != 400 {
		t.Fatalf("checkpoint of %d leaves, want 400", cp.Size)
	}
	var pda string
	testenv.Must(t, f.env.Store.Pool().QueryRow(context.Background(), `SELECT pda FROM log_leaves WHERE idx = 7`).Scan(&pda), "pda")
	for _, c := range []struct{ path, control string }{
		// The checkpoint and tiles at the origin's path (edge.test/log),
		// outside /api/v1; every tile, partial ones too, is immutable.
		{"^/log/tile/0/000", translog.ControlImmutable},
		{"^/log/tile/entries/000", translog.ControlImmutable},
		{"^/log/tile/0/001.p/144", translog.ControlImmutable},
		{"^/log/tile/1/000.p/1", translog.ControlImmutable},
		{"/log/consistency?from=3&to=400", translog.ControlImmutable},
		{"^/log/checkpoint", translog.ControlShort},
		{"/attestations/" + pda + "/proof", translog.ControlShort},
	} {
		// Nodes refresh their checkpoint every 20 ms: wait for both.
		time.Sleep(50 * time.Millisecond)
		hot := f.warm(t, c.path, nil)
		if got := hot.header.Get("Cache-Control"); got != c.control {
			t.Errorf("%s: Cache-Control %q, want %q", c.path, got, c.control)
		}
		if c.control != translog.ControlImmutable {
			continue // a HIT while fresh (2 s) is all it promises
		}
		reached := f.seen.get(c.path)
		for i := range 10 {
			if a := f.get(t, c.path, nil); a.cache() != "HIT" || !bytes.Equal(a.body, hot.body) {
				t.Fatalf("%s repeat %d: %q", c.path, i, a.cache())
			}
		}
		if n := f.seen.get(c.path); n != reached {
			t.Errorf("%s: the nodes saw %d requests after the edge held it (%d before)", c.path, n, reached)
		}
		if reached < 1 || reached > 2 {
			t.Errorf("%s reached the nodes %d times", c.path, reached)
		}
	}
	// The proof asked for as a tlog-proof by Accept and as JSON share a
	// URL: the edge keeps them apart (its key holds the Accept token).
	proofPath := "/attestations/" + pda + "/proof"
	for range 2 {
		for _, accept := range []string{"application/json", "text/x-tlog-proof"} {
			a := f.get(t, proofPath, map[string]string{"Accept": accept})
			if a.status != 200 {
				t.Fatalf("%s with Accept %s: %d", proofPath, accept, a.status)
			}
			isProof := bytes.HasPrefix(a.body, []byte("c2sp.org/tlog-proof@v1\n"))
			if (accept == "text/x-tlog-proof") != isProof || (isProof && a.header.Get("Content-Type") != "text/x-tlog-proof") {
				t.Fatalf("%s with Accept %s through the edge (%s): %s, %.60q", proofPath, accept, a.cache(), a.header.Get("Content-Type"), a.body)
			}
		}
	}
}
