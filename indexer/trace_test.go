package indexer

import (
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/otlptest"
)

// Each indexer round that finds transactions is a trace: its fetches (the
// chain RPC calls under them) and each batch applied (its PostgreSQL
// statements under it) are children of the round's span.
func TestRoundsAreTraced(t *testing.T) {
	// Not parallel: tracing is process-wide.
	recv := otlptest.Start(t)
	flush := recv.Enable(t, "index")
	c := startChain(t, devnet.Config{})
	gen(t, c, 3, 60, 10)
	st := newStore(t)
	r := startIndexer(t, st, c, nil)
	waitExact(t, st, c, 60*time.Second)
	r.stop(t)
	flush()

	spans := recv.Spans()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	parentName := func(s otlptest.Span) string { return byID[s.ParentSpanID].Name }
	seen := map[string]bool{}
	for _, s := range spans {
		switch {
		case s.Name == "indexer sync":
			if s.ParentSpanID != "" || s.Service != "attestd-index" {
				t.Errorf("sync span %+v: want a root of attestd-index", s)
			}
			seen["sync"] = true
		case s.Name == "indexer fetch", s.Name == "indexer batch":
			if parentName(s) != "indexer sync" || byID[s.ParentSpanID].TraceID != s.TraceID {
				t.Errorf("%s span's parent %q, want indexer sync", s.Name, parentName(s))
			}
			seen[s.Name] = true
		case strings.HasPrefix(s.Name, "chain rpc getTransaction"):
			if parentName(s) == "indexer fetch" {
				seen["rpc under fetch"] = true
			}
		case strings.HasPrefix(s.Name, "postgres"):
			if parentName(s) == "indexer batch" {
				seen["postgres under batch"] = true
			}
		}
	}
	for _, want := range []string{"sync", "indexer fetch", "indexer batch", "rpc under fetch", "postgres under batch"} {
		if !seen[want] {
			t.Errorf("no %s span among %d", want, len(spans))
		}
	}
}
