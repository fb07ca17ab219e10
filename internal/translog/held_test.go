package translog_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/translog/logformat"
)

// TestHeldLogServesNoOlderCheckpoint: a database restored from a backup
// (held) or regrowing below its witnessed size makes a node that starts
// on it answer 503 with the reason on every route that rests on a
// checkpoint, never an older checkpoint and never another 5xx, across a
// matrix of routes, methods and malformed parameters; a node that served
// the newer checkpoint before keeps serving it; the checkpoint is served
// again once the log is back at its witnessed size.
func TestHeldLogServesNoOlderCheckpoint(t *testing.T) {
	le := newLogEnv(t, 2)
	recs := le.bulk(t, 300, attestation.Finalized)
	le.appendAll(t)
	waitCheckpoint(t, le.node, 300)
	ctx := context.Background()
	testenv.Must(t, le.st.HoldLog(ctx), "hold")
	fresh := le.startNode(t, le.cfg)

	paths := []string{"^/log/checkpoint", "^/log/checkpoint/", "^/LOG/checkpoint", "^/log/tile/0/000", "^/log/tile/0/001.p/44",
		"^/log/tile/entries/000", "^/log/tile/entries/001.p/44", "^/log/tile/0/x001/000", "^/log/tile/0/../000",
		"/attestations/" + recs[0].PDA + "/proof", "/attestations/" + recs[299].PDA + "/proof", "/attestations/not-a-pda/proof",
		"/attestations/" + strings.Repeat("1", 200) + "/proof", "/log/consistency?from=1&to=300", "/log/consistency?from=1&to=301",
		"/log/consistency?from=0&to=1", "/log/consistency?from=x", "/log/consistency", "/log/key", "/log/checkpoint?x=1"}
	matrix := func(n *apptest.Node, reason string) int {
		t.Helper()
		runs := 0
		for _, p := range paths {
			for _, m := range []string{http.MethodGet, http.MethodHead} {
				var r *apptest.Response
				root, atRoot := strings.CutPrefix(p, "^")
				switch {
				case m == http.MethodHead: // the status alone (the validating client reads bodies)
					target := n.URL + p
					if atRoot {
						target = n.Root + root
					}
					res, err := http.Head(target)
					testenv.Must(t, err, "HEAD %s", p)
					res.Body.Close()
					r = &apptest.Response{Status: res.StatusCode, Header: res.Header}
				case atRoot:
					r = n.GetRoot(t, root)
				default:
					r = n.Get(t, p)
				}
				runs++
				switch {
				case r.Status >= 500 && r.Status != http.StatusServiceUnavailable:
					t.Errorf("%s %s while held: %d %s", m, p, r.Status, r.Body)
				case r.Status == http.StatusOK && strings.Contains(p, "checkpoint"):
					t.Errorf("%s %s served a checkpoint while held: %s", m, p, r.Body)
				case r.Status == http.StatusServiceUnavailable && m == http.MethodGet && !strings.Contains(r.ErrorMessage(), reason):
					t.Errorf("%s %s: 503 without the reason %q: %s", m, p, reason, r.Body)
				}
			}
		}
		return runs
	}
	testenv.WaitForState(t, "the fresh node refuses the held log's checkpoint", testenv.Patience, func() (bool, string) {
		r := fresh.GetRoot(t, "/log/checkpoint")
		return r.Status == http.StatusServiceUnavailable && strings.Contains(r.ErrorMessage(), "restored from a backup"), fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	runs := matrix(fresh, "restored from a backup")
	if h := fresh.Get(t, "/health"); !strings.Contains(string(h.Body), "restored from a backup") {
		t.Errorf("/health does not say the log is held: %s", h.Body)
	}
	if r := le.node.GetRoot(t, "/log/checkpoint"); r.Status != http.StatusOK {
		t.Fatalf("the node that served size 300 stopped serving it: %d %s", r.Status, r.Body)
	}

	// The appender asked the witnesses: 310 was cosigned; the log regrows.
	testenv.Must(t, le.st.RaiseLogWitnessedSize(ctx, 310), "witnessed size")
	testenv.Must(t, le.st.ReleaseLogHold(ctx), "release")
	testenv.WaitForState(t, "the fresh node says the log regrows", testenv.Patience, func() (bool, string) {
		r := fresh.GetRoot(t, "/log/checkpoint")
		return r.Status == http.StatusServiceUnavailable && strings.Contains(r.ErrorMessage(), "300 of the 310"), fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	runs += matrix(fresh, "regrowing")
	le.bulk(t, 10, attestation.Finalized)
	le.appendAll(t)
	body := waitCheckpoint(t, fresh, 310)
	if c, err := logformat.ParseCheckpoint(body); err != nil || c.Size != 310 {
		t.Fatalf("after regrowing: %v %q", err, body)
	}
	t.Logf("hostile matrix: %d requests while held or regrowing, none answered 5xx but 503, none served a checkpoint", runs)
}
