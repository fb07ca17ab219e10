package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestCountersMatchCountingRows holds every total the API answers (list
// totals over agent, type and time range; stats; agent metrics; the
// hourly counts with their privacy-mode share) to a count(*) of the rows,
// through inserts, re-applied batches, finalization and fork removal.
func TestCountersMatchCountingRows(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	now := time.Now().UTC().Truncate(time.Second)
	agents := []string{"agentA", "agentB", "agentC"}
	var txs []string
	var batches []*Batch
	for b := 0; b < 40; b++ {
		batch := &Batch{}
		for i := 0; i < 1+rng.IntN(6); i++ {
			tx := fmt.Sprintf("tx%d-%d", b, i)
			txs = append(txs, tx)
			// Spread over 3 days, with some rows exactly on hour boundaries.
			ts := now.Add(-time.Duration(rng.IntN(72*3600)) * time.Second)
			if rng.IntN(4) == 0 {
				ts = ts.Truncate(time.Hour)
			}
			c := attestation.Confirmed
			if rng.IntN(3) == 0 {
				c = attestation.Finalized
			}
			agent := agents[rng.IntN(len(agents))]
			for e := 0; e < 1+rng.IntN(5); e++ {
				typ := attestation.ActionType(rng.IntN(attestation.NumActionTypes))
				r := rec(agent, tx, e, typ, ts.Add(time.Duration(e)*time.Second), c)
				r.PrivacyMode = rng.IntN(3) == 0
				batch.Attestations = append(batch.Attestations, r)
			}
		}
		batches = append(batches, batch)
		_, err := st.Apply(ctx, batch)
		testenv.Must(t, err, "apply")
	}
	// Re-applying changes nothing, counters included.
	for _, b := range batches[:5] {
		_, err := st.Apply(ctx, b)
		testenv.Must(t, err, "re-apply")
	}
	checkCounters(t, st, rng, now, agents)

	// Finalize some transactions, remove others as if a fork dropped them
	// (finalized rows survive removal).
	finalizeAndFork(t, st, rng, txs)
	checkCounters(t, st, rng, now, agents)
	if n := scalar(t, st, "SELECT count(*) FROM attestation_hours WHERE n < 0"); n != 0 {
		t.Fatalf("%d negative hourly counters", n)
	}
	// The daily counters (migration 0016, kept by triggers) are the
	// hourly ones summed per UTC day, after inserts, repeats and the fork.
	if n := scalar(t, st, `SELECT count(*) FROM (
			SELECT agent_pda, action_type, date_trunc('day', hour, 'UTC') AS day, sum(n) AS n FROM attestation_hours GROUP BY 1, 2, 3 HAVING sum(n) <> 0) h
		FULL JOIN (SELECT * FROM attestation_days WHERE n <> 0) d USING (agent_pda, action_type, day)
		WHERE h.n IS DISTINCT FROM d.n`); n != 0 {
		t.Fatalf("%d daily counters differ from the hourly ones", n)
	}
}

// finalizeAndFork finalizes a third of txs and then removes half of them
// as a fork would (the finalized among them survive), in random order.
func finalizeAndFork(t *testing.T, st *Store, rng *rand.Rand, txs []string) {
	t.Helper()
	ctx := context.Background()
	rng.Shuffle(len(txs), func(i, j int) { txs[i], txs[j] = txs[j], txs[i] })
	_, err := st.Finalize(ctx, txs[:len(txs)/3])
	testenv.Must(t, err, "finalize")
	removed, err := st.RemoveTransactions(ctx, txs[len(txs)/4:len(txs)*3/4])
	testenv.Must(t, err, "remove")
	if removed == 0 {
		t.Fatal("fork removal removed nothing: the test does not exercise it")
	}
}

func checkCounters(t *testing.T, st *Store, rng *rand.Rand, now time.Time, agents []string) {
	t.Helper()
	ctx := context.Background()
	types := []*attestation.ActionType{nil}
	for i := 0; i < attestation.NumActionTypes; i++ {
		typ := attestation.ActionType(i)
		types = append(types, &typ)
	}
	bound := func() *time.Time {
		var t time.Time
		switch rng.IntN(7) {
		case 0:
			return nil
		case 5: // the smallest and largest bounds the API accepts
			t = time.Time{}
		case 6:
			t = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
		case 1: // a whole hour
			t = now.Add(-time.Duration(rng.IntN(80)) * time.Hour).Truncate(time.Hour)
		case 2: // far outside the data
			t = now.Add(time.Duration(rng.IntN(2)*2-1) * 1000 * time.Hour)
		default:
			t = now.Add(-time.Duration(rng.IntN(80*3600)) * time.Second)
		}
		return &t
	}
	checked := 0
	for i := 0; i < 400; i++ {
		f := Filter{ActionType: types[rng.IntN(len(types))]}
		if rng.IntN(2) == 0 {
			f.AgentPDA = agents[rng.IntN(len(agents))]
		}
		f.Range = Range{From: bound(), To: bound()}
		if f.Range.From != nil && f.Range.To != nil && f.Range.To.Before(*f.Range.From) {
			f.Range.From, f.Range.To = f.Range.To, f.Range.From
		}
		if i%10 == 0 { // ranges inside one hour or across one boundary
			from := now.Add(-time.Duration(rng.IntN(70*3600)) * time.Second)
			to := from.Add(time.Duration(rng.IntN(7200)) * time.Second)
			f.Range = Range{From: &from, To: &to}
		}
		got, err := count(ctx, st.pool, f)
		testenv.Must(t, err, "count")
		where, args := f.where(false)
		want := scalar(t, st, "SELECT count(*) FROM attestations"+where, args...)
		if got != want {
			q, _ := countSQL(f)
			t.Fatalf("filter agent=%q type=%v from=%v to=%v: counters say %d, rows %d\n%s", f.AgentPDA, f.ActionType, f.Range.From, f.Range.To, got, want, q)
		}
		checked++
	}
	at := now.Add(-time.Duration(rng.IntN(3600)) * time.Second)
	stats, err := st.Stats(ctx, at)
	testenv.Must(t, err, "stats")
	if want := scalar(t, st, "SELECT count(*) FROM attestations WHERE ts >= $1 AND ts < $2", at.Add(-24*time.Hour), at.Add(time.Second)); stats.Last24h != want {
		t.Fatalf("stats last24h %d, rows %d", stats.Last24h, want)
	}
	if want := scalar(t, st, "SELECT count(*) FROM attestations"); stats.Attestations != want {
		t.Fatalf("stats attestations %d, rows %d", stats.Attestations, want)
	}
	for _, agent := range agents {
		sum, err := summarise(ctx, st.pool, agent, at)
		testenv.Must(t, err, "summarise")
		q := "SELECT count(*) FROM attestations WHERE agent_pda = $1 AND ts >= $2 AND ts < $3"
		if want := scalar(t, st, q, agent, at.Add(-24*time.Hour), at.Add(time.Second)); sum.last24h != want {
			t.Fatalf("%s last24h %d, rows %d", agent, sum.last24h, want)
		}
		if want := scalar(t, st, q, agent, at.Add(-7*24*time.Hour), at.Add(time.Second)); sum.last7d != want {
			t.Fatalf("%s last7d %d, rows %d", agent, sum.last7d, want)
		}
		if want := scalar(t, st, "SELECT count(*) FROM attestations WHERE agent_pda = $1", agent); sum.total != want {
			t.Fatalf("%s total %d, rows %d", agent, sum.total, want)
		}
	}
	// The hourly table itself, row by row.
	if n := scalar(t, st, `SELECT count(*) FROM (
			SELECT COALESCE(agent_pda, '') a, COALESCE(action_type, -1) t, hour, count(*) n, count(*) FILTER (WHERE privacy_mode) p
			FROM (SELECT agent_pda, action_type, privacy_mode, date_trunc('hour', ts, 'UTC') AS hour FROM attestations) x
			GROUP BY GROUPING SETS ((agent_pda, action_type, hour), (agent_pda, hour), (action_type, hour), (hour))
		) c FULL JOIN (SELECT * FROM attestation_hours WHERE n <> 0) h
		ON h.agent_pda = c.a AND h.action_type = c.t AND h.hour = c.hour
		WHERE h.n IS DISTINCT FROM c.n OR h.privacy IS DISTINCT FROM c.p`); n != 0 {
		t.Fatalf("%d hourly counters differ from the rows", n)
	}
	t.Logf("%d filters checked", checked)
}
