package premium_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/logfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLogPositions: bulk verification and the forensic report say, per
// attestation, whether it is in the transparency log and at which index
// (as the log stored it), before and after the appender runs.
func TestLogPositions(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 40})
	pn := startNode(t, env, premium.Config{})
	now := time.Now().UTC().Truncate(time.Second)
	c := craftAgent(t, env, now)
	agent := c.agent.PDA.String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Before the appender: nothing in the log, everything finalized waits.
	rep, err := pn.handler.BuildReport(ctx, agent, store.Range{})
	testenv.Must(t, err, "report")
	if rep.Integrity.Log.InLog != 0 || rep.Integrity.Log.AwaitingAppend != rep.Summary.Totals.Finalized || rep.Summary.Totals.Finalized == 0 {
		t.Fatalf("before append: log %+v, finalized %d", rep.Integrity.Log, rep.Summary.Totals.Finalized)
	}
	named := 0
	for _, a := range rep.Anomalies {
		if len(a.Log) != len(a.PDAs) {
			t.Fatalf("anomaly %s: %d log positions for %d pdas", a.Kind, len(a.Log), len(a.PDAs))
		}
		for _, p := range a.Log {
			if p.InLog || p.LogIndex != nil {
				t.Fatalf("before append: %+v", p)
			}
			named++
		}
	}
	if named == 0 {
		t.Fatal("the crafted agent's report names no attestation")
	}

	lg := logfixture.NewServed(t, env, "attestd.test/log")
	cp := lg.AppendAll(t)
	// A confirmed attestation stays out of the log.
	recs := seed.NewAttestations([]seed.Agent{c.agent}, 1, now, 90_000_000, 987_654)
	recs[0].Commitment = attestation.Confirmed
	apply(t, env, &store.Batch{Attestations: recs})
	pending := recs[0].PDA
	lg.AppendAll(t)

	rep, err = pn.handler.BuildReport(ctx, agent, store.Range{})
	testenv.Must(t, err, "report")
	if rep.Integrity.Log.InLog != rep.Summary.Totals.Finalized || rep.Integrity.Log.AwaitingAppend != 0 || rep.Integrity.Unfinalized != 1 {
		t.Fatalf("after append: log %+v, totals %+v", rep.Integrity.Log, rep.Summary.Totals)
	}
	var pdas []string
	for _, a := range rep.Anomalies {
		pdas = append(pdas, a.PDAs...)
	}
	idx, err := env.Store.LogIndexes(ctx, pdas)
	testenv.Must(t, err, "log indexes")
	for _, a := range rep.Anomalies {
		for k, p := range a.Log {
			want, ok := idx[a.PDAs[k]]
			if p.PDA != a.PDAs[k] || p.InLog != ok || (ok && (p.LogIndex == nil || *p.LogIndex != want || want >= cp.Size)) ||
				(ok != (p.Proof != nil)) || (ok && *p.Proof != "/api/v1/attestations/"+p.PDA+"/proof?format=tlog-proof") {
				t.Fatalf("anomaly %s position %d: %+v, want index %d (%v)", a.Kind, k, p, want, ok)
			}
		}
	}
	// Through the API (the answer is checked against the OpenAPI file).
	pn.SettleEpoch(t)
	if r := pn.get(t, "/premium/forensic-report/"+agent); r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Body)
	}

	logged := c.recs[3].PDA
	body, _ := json.Marshal(map[string]any{"ids": []string{logged, pending, "11111111111111111111111111111112", "nope"}})
	r := pn.verify(t, body)
	if r.Status != 200 {
		t.Fatalf("bulk verify: %d %s", r.Status, r.Body)
	}
	var res struct {
		Data []struct {
			ID       string
			Valid    bool
			InLog    bool
			LogIndex *int64
			Proof    *string
		}
	}
	r.JSON(t, &res)
	want, _ := env.Store.LogIndexes(ctx, []string{logged})
	got := res.Data
	if len(got) != 4 || !got[0].InLog || got[0].LogIndex == nil || *got[0].LogIndex != want[logged] ||
		got[0].Proof == nil || *got[0].Proof != "/api/v1/attestations/"+logged+"/proof?format=tlog-proof" {
		t.Fatalf("logged: %+v (want index %d)", got, want[logged])
	}
	for _, g := range got[1:] {
		if g.InLog || g.LogIndex != nil || g.Proof != nil {
			t.Fatalf("not logged: %+v", g)
		}
	}
}
