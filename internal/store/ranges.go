package store

import (
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
)

// args collects the arguments of a statement built piece by piece.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// floorHour and ceilHour round t to a whole UTC hour.
func floorHour(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

func ceilHour(t time.Time) time.Time {
	f := floorHour(t)
	if f.Equal(t) {
		return f
	}
	return f.Add(time.Hour)
}

// countExpr is an SQL expression counting the attestations of agent ("":
// all agents) and typ (nil: all types) with timestamps in r, from the
// maintained counters: attestation_counts for an open range, the whole
// hours of attestation_hours otherwise, plus the partial hours at the
// edges of r counted on the matching index (less than an hour of rows at
// each edge). A range bounded only above is the total minus what comes
// after it, so the work grows with the hours after the bound, not with
// the whole history.
func countExpr(agent string, typ *attestation.ActionType, r Range, a *args) string {
	counterAgent, counterType := agent, int16(allTypes)
	if typ != nil {
		counterType = int16(*typ)
	}
	filter := func() string {
		var conds []string
		if agent != "" {
			conds = append(conds, "agent_pda = "+a.add(agent))
		}
		if typ != nil {
			conds = append(conds, "action_type = "+a.add(int16(*typ)))
		}
		return strings.Join(append(conds, ""), " AND ")
	}
	edge := func(from, to time.Time) string {
		if !from.Before(to) {
			return ""
		}
		return "(SELECT count(*) FROM attestations WHERE " + filter() + "ts >= " + a.add(from) + " AND ts < " + a.add(to) + ")"
	}
	hours := func(from time.Time, to *time.Time) string {
		q := "(SELECT COALESCE(sum(n), 0) FROM attestation_hours WHERE agent_pda = " + a.add(counterAgent) +
			" AND action_type = " + a.add(counterType) + " AND hour >= " + a.add(from)
		if to != nil {
			q += " AND hour < " + a.add(*to)
		}
		return q + ")"
	}
	total := func() string {
		q := "(SELECT COALESCE(sum(n), 0) FROM attestation_counts WHERE agent_pda = " + a.add(counterAgent)
		if typ != nil {
			q += " AND action_type = " + a.add(counterType)
		}
		return q + ")"
	}
	sum := func(sign string, parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return "0::bigint"
		}
		return "(" + strings.Join(out, sign) + ")::bigint"
	}
	switch {
	case r.From == nil && r.To == nil:
		return sum(" + ", total())
	case r.To == nil:
		from := r.From.UTC()
		return sum(" + ", edge(from, ceilHour(from)), hours(ceilHour(from), nil))
	case r.From == nil:
		to := r.To.UTC()
		return sum(" - ", total(), edge(to, ceilHour(to)), hours(ceilHour(to), nil))
	}
	from, to := r.From.UTC(), r.To.UTC()
	if !from.Before(to) {
		return "0::bigint"
	}
	hf, ht := ceilHour(from), floorHour(to)
	if !hf.Before(ht) { // no whole hour inside: less than two hours of rows
		return sum(" + ", edge(from, to))
	}
	return sum(" + ", edge(from, hf), hours(hf, &ht), edge(ht, to))
}
