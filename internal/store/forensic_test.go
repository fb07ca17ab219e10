package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestForensicMatchesTheRows holds the forensic aggregates, which come from
// maintained counters, repeats and partial indexes, to the same figures
// computed here from the agent's rows, over random periods and rules:
// after concurrent writes (repeated hashes split between transactions
// that commit at the same time), finalization and fork removal.
func TestForensicMatchesTheRows(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	now := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	agents := []string{"agentA", "agentB"}
	hashes := make([][32]byte, 12) // a small pool, so hashes repeat, within and across agents
	for i := range hashes {
		hashes[i] = sha256.Sum256([]byte{byte(i)})
	}
	var batches []*Batch
	var txs []string
	for b := 0; b < 60; b++ {
		batch := &Batch{}
		for i := 0; i < 1+rng.IntN(4); i++ {
			tx := fmt.Sprintf("tx%d-%d", b, i)
			txs = append(txs, tx)
			// Four days, with a quiet day and a half in the middle, some
			// rows on hour boundaries and some busy minutes.
			ts := now.Add(-time.Duration(rng.Int64N(int64(96*time.Hour/time.Microsecond))) * time.Microsecond)
			if d := now.Sub(ts); d > 40*time.Hour && d < 76*time.Hour {
				ts = ts.Add(-36 * time.Hour)
			}
			switch rng.IntN(6) {
			case 0:
				ts = ts.Truncate(time.Hour)
			case 1:
				ts = ts.Truncate(time.Minute)
			}
			c := attestation.Confirmed
			if rng.IntN(3) == 0 {
				c = attestation.Finalized
			}
			agent := agents[rng.IntN(len(agents))]
			for e := 0; e < 1+rng.IntN(6); e++ {
				r := rec(agent, tx, e, attestation.ActionType(rng.IntN(attestation.NumActionTypes)), ts.Add(time.Duration(e)*time.Second), c)
				r.PrivacyMode = rng.IntN(4) == 0
				r.SignatureValid = rng.IntN(8) != 0
				if rng.IntN(5) == 0 {
					r.ActionHash = hashes[rng.IntN(len(hashes))]
				}
				batch.Attestations = append(batch.Attestations, r)
			}
		}
		batches = append(batches, batch)
	}
	// Three writers at once: a hash repeated in two transactions committed
	// together must still be found.
	var wg sync.WaitGroup
	errs := make(chan error, len(batches))
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(batches); i += 3 {
				if _, err := st.Apply(ctx, batches[i]); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("apply: %v", err)
	}
	checkForensic(t, st, rng, now, agents)

	finalizeAndFork(t, st, rng, txs)
	checkForensic(t, st, rng, now, agents)
}

// forensicRow is what the reference computation reads of an attestation.
type forensicRow struct {
	pda                      string
	ts                       time.Time
	slot                     int64
	typ                      attestation.ActionType
	hash                     [32]byte
	privacy, final, sigValid bool
}

func checkForensic(t *testing.T, st *Store, rng *rand.Rand, now time.Time, agents []string) {
	t.Helper()
	ctx := context.Background()
	all := map[string][]forensicRow{}
	rows, err := st.Pool().Query(ctx, `SELECT agent_pda, pda, ts, slot, action_type, action_hash, privacy_mode, finalized, signature_valid
		FROM attestations ORDER BY ts, slot, pda`)
	testenv.Must(t, err, "read rows")
	for rows.Next() {
		var agent string
		var r forensicRow
		var typ int16
		var hash []byte
		testenv.Must(t, rows.Scan(&agent, &r.pda, &r.ts, &r.slot, &typ, &hash, &r.privacy, &r.final, &r.sigValid), "scan")
		r.ts, r.typ = r.ts.UTC(), attestation.ActionType(typ)
		copy(r.hash[:], hash)
		all[agent] = append(all[agent], r)
	}
	testenv.Must(t, rows.Err(), "read rows")
	bound := func() *time.Time {
		var b time.Time
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1: // a whole hour
			b = now.Add(-time.Duration(rng.IntN(100)) * time.Hour)
		case 2: // far outside the data
			b = now.Add(time.Duration(rng.IntN(2)*2-1) * 1000 * time.Hour)
		default:
			b = now.Add(-time.Duration(rng.Int64N(int64(100*time.Hour/time.Microsecond))) * time.Microsecond)
		}
		return &b
	}
	gaps := []time.Duration{0, 20 * time.Minute, time.Hour, 90 * time.Minute, 5 * time.Hour, 25 * time.Hour}
	checked := map[string]int{}
	for i := 0; i < 240; i++ {
		q := ForensicQuery{
			AgentPDA:       agents[rng.IntN(len(agents))],
			Range:          Range{From: bound(), To: bound()},
			BurstPerMinute: []int{0, 2, 3, 5}[rng.IntN(4)],
			LongGap:        gaps[rng.IntN(len(gaps))],
			MaxPerKind:     []int{0, 1, 3, 100}[rng.IntN(4)],
			ExamplePDAs:    []int{0, 1, 10}[rng.IntN(3)],
		}
		if r := &q.Range; r.From != nil && r.To != nil && r.To.Before(*r.From) {
			r.From, r.To = r.To, r.From
		}
		if i%8 == 0 { // within an hour, or across one boundary
			from := now.Add(-time.Duration(rng.Int64N(int64(96*time.Hour/time.Microsecond))) * time.Microsecond)
			to := from.Add(time.Duration(rng.Int64N(int64(2*time.Hour/time.Microsecond))) * time.Microsecond)
			q.Range = Range{From: &from, To: &to}
		}
		got, err := st.Forensic(ctx, q)
		testenv.Must(t, err, "forensic")
		want := referenceForensic(all[q.AgentPDA], q)
		if g, w := describeForensic(got), describeForensic(want); g != w {
			t.Fatalf("agent %s from %v to %v burst %d gap %s limit %d examples %d:\ngot  %s\nwant %s",
				q.AgentPDA, q.Range.From, q.Range.To, q.BurstPerMinute, q.LongGap, q.MaxPerKind, q.ExamplePDAs, g, w)
		}
		for what, n := range map[string]int64{"rows": want.Total, "bursts": want.TotalBursts, "gaps": want.TotalGaps,
			"duplicates": want.TotalDuplicates, "invalid": want.SignatureFailed, "unfinalized": want.Total - want.Finalized} {
			if n > 0 {
				checked[what]++
			}
		}
	}
	// The comparison means something only if each kind was found.
	for _, what := range []string{"rows", "bursts", "gaps", "duplicates", "invalid", "unfinalized"} {
		if checked[what] == 0 {
			t.Fatalf("no period had any %s: the data does not exercise them (%v)", what, checked)
		}
	}
	t.Logf("periods with something of each kind: %v", checked)
}

// referenceForensic computes ForensicData from the agent's rows, ordered
// by (ts, slot, pda), the slow and obvious way.
func referenceForensic(all []forensicRow, q ForensicQuery) ForensicData {
	var rows []forensicRow
	for _, r := range all {
		if (q.Range.From == nil || !r.ts.Before(*q.Range.From)) && (q.Range.To == nil || r.ts.Before(*q.Range.To)) {
			rows = append(rows, r)
		}
	}
	listed := func(n int) bool { return n < q.MaxPerKind }
	d := ForensicData{ByType: map[attestation.ActionType]int64{}}
	days, dayTypes, minutes := map[time.Time]int64{}, map[DayTypeCount]int64{}, map[time.Time]int64{}
	for i, r := range rows {
		d.Total++
		if r.final {
			d.Finalized++
		}
		if r.privacy {
			d.Privacy++
		}
		if !r.sigValid {
			d.SignatureFailed++
			if listed(len(d.InvalidSignatures)) {
				d.InvalidSignatures = append(d.InvalidSignatures, Point{PDA: r.pda, At: r.ts})
			}
		}
		d.ByType[r.typ]++
		day := r.ts.Truncate(24 * time.Hour)
		days[day]++
		dayTypes[DayTypeCount{Day: day, ActionType: r.typ}]++
		minutes[r.ts.Truncate(time.Minute)]++
		if i > 0 && q.LongGap > 0 && r.ts.Sub(rows[i-1].ts) >= q.LongGap {
			d.TotalGaps++
			if listed(len(d.Gaps)) {
				d.Gaps = append(d.Gaps, Span{At: rows[i-1].ts, Until: r.ts})
			}
		}
	}
	if len(rows) > 0 {
		d.First, d.Last = &rows[0].ts, &rows[len(rows)-1].ts
	}
	for day, n := range days {
		d.Days = append(d.Days, DayCount{Day: day, N: n})
	}
	slices.SortFunc(d.Days, func(a, b DayCount) int { return a.Day.Compare(b.Day) })
	for k, n := range dayTypes {
		d.DayTypes = append(d.DayTypes, DayTypeCount{Day: k.Day, ActionType: k.ActionType, N: n})
	}
	slices.SortFunc(d.DayTypes, func(a, b DayTypeCount) int {
		return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.ActionType, b.ActionType))
	})
	var bursts []Span
	for m, n := range minutes {
		if q.BurstPerMinute > 0 && n >= int64(q.BurstPerMinute) {
			bursts = append(bursts, Span{At: m, Until: m.Add(time.Minute), N: n})
		}
	}
	slices.SortFunc(bursts, func(a, b Span) int { return a.At.Compare(b.At) })
	d.TotalBursts = int64(len(bursts))
	d.Bursts = bursts[:min(len(bursts), max(q.MaxPerKind, 0))]
	byHash := map[[32]byte]*Duplicate{}
	var dups []*Duplicate
	for _, r := range rows {
		dup := byHash[r.hash]
		if dup == nil {
			dup = &Duplicate{Hash: r.hash, First: r.ts}
			byHash[r.hash] = dup
			dups = append(dups, dup)
		}
		dup.N++
		dup.Last = r.ts
		if len(dup.PDAs) < q.ExamplePDAs {
			dup.PDAs = append(dup.PDAs, r.pda)
		}
	}
	for _, dup := range dups { // in order of first attestation, hash order among equal times
		if dup.N > 1 {
			d.TotalDuplicates++
			d.Duplicates = append(d.Duplicates, *dup)
		}
	}
	slices.SortStableFunc(d.Duplicates, func(a, b Duplicate) int {
		return cmp.Or(a.First.Compare(b.First), strings.Compare(string(a.Hash[:]), string(b.Hash[:])))
	})
	d.Duplicates = d.Duplicates[:min(len(d.Duplicates), max(q.MaxPerKind, 0))]
	if q.MaxPerKind <= 0 {
		d.Bursts, d.Duplicates = nil, nil
	}
	return d
}

// describeForensic renders ForensicData canonically, for comparison.
func describeForensic(d ForensicData) string {
	var b strings.Builder
	tm := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(&b, "total %d final %d privacy %d bad %d first %s last %s types", d.Total, d.Finalized, d.Privacy, d.SignatureFailed, tm(d.First), tm(d.Last))
	for typ := range attestation.ActionType(attestation.NumActionTypes) {
		if n := d.ByType[typ]; n != 0 {
			fmt.Fprintf(&b, " %d:%d", typ, n)
		}
	}
	b.WriteString(" | days")
	for _, x := range d.Days {
		fmt.Fprintf(&b, " %s=%d", x.Day.UTC().Format(time.DateOnly), x.N)
	}
	b.WriteString(" | day types")
	for _, x := range d.DayTypes {
		fmt.Fprintf(&b, " %s/%d=%d", x.Day.UTC().Format(time.DateOnly), x.ActionType, x.N)
	}
	span := func(name string, total int64, s []Span) {
		fmt.Fprintf(&b, " | %s %d:", name, total)
		for _, x := range s {
			fmt.Fprintf(&b, " %s..%s=%d", tm(&x.At), tm(&x.Until), x.N)
		}
	}
	span("bursts", d.TotalBursts, d.Bursts)
	span("gaps", d.TotalGaps, d.Gaps)
	fmt.Fprintf(&b, " | duplicates %d:", d.TotalDuplicates)
	for _, x := range d.Duplicates {
		fmt.Fprintf(&b, " %x..=%d %s..%s %v", x.Hash[:4], x.N, tm(&x.First), tm(&x.Last), x.PDAs)
	}
	fmt.Fprintf(&b, " | after revocation %d: %v | invalid:", d.TotalAfterRevocation, d.AfterRevocation)
	for _, p := range d.InvalidSignatures {
		fmt.Fprintf(&b, " %s@%s", p.PDA, tm(&p.At))
	}
	return b.String()
}
