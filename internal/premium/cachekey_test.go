package premium_test

import (
	"testing"

	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/testing/apptest"
)

// TestRangeBoundsDoNotPoisonPremiumAnswers: a report or a history asked
// with a bound that once encoded like "absent" (the Unix epoch, the zero
// instant) answers that range, and the open report and history stay whole
// for everyone: a report with zero totals and a valid reportHash must
// never be served for the open period.
func TestRangeBoundsDoNotPoisonPremiumAnswers(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 200})
	pn := startNode(t, env, premium.Config{})
	pn.SettleEpoch(t)
	agent := env.Seeded.Agents[0].PDA.String()
	want := count(t, env, "WHERE agent_pda = $1", agent)
	for _, bound := range []string{"to=1970-01-01T00:00:00Z", "to=0001-01-01", "to=2262-04-12T00:00:00Z", "to=1677-09-21T00:12:44Z"} {
		var rep struct{ Data premium.Report }
		r := pn.get(t, "/premium/forensic-report/"+agent+"?"+bound)
		if r.Status != 200 {
			t.Fatalf("report %s: %d %s", bound, r.Status, r.Body)
		}
		verifyReportHash(t, r.Body)
		r.JSON(t, &rep)
		if rep.Data.Period.To == nil {
			t.Fatalf("report %s: period.to missing", bound)
		}
		if r := pn.get(t, "/premium/full-history/"+agent+"?"+bound); r.Status != 200 {
			t.Fatalf("history %s: %d %s", bound, r.Status, r.Body)
		}
		var open struct{ Data premium.Report }
		r = pn.get(t, "/premium/forensic-report/"+agent)
		verifyReportHash(t, r.Body)
		r.JSON(t, &open)
		if open.Data.Summary.Totals.Attestations != want || open.Data.Period.To != nil {
			t.Fatalf("after %s the open report counts %d attestations (period %+v), want %d",
				bound, open.Data.Summary.Totals.Attestations, open.Data.Period, want)
		}
		var hist struct {
			Pagination struct{ Total int64 } `json:"pagination"`
		}
		pn.get(t, "/premium/full-history/"+agent).JSON(t, &hist)
		if hist.Pagination.Total != want {
			t.Fatalf("after %s the open history totals %d, want %d", bound, hist.Pagination.Total, want)
		}
	}
}
