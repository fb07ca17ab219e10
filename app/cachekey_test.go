package app_test

import (
	"net/url"
	"testing"

	"github.com/attestd/attestd/internal/testing/apptest"
)

// TestNoCachePoisoningThroughRangeBounds: bounds that once encoded like
// "absent" in cache keys (the Unix epoch, the zero instant) or like another
// bound (instants past int64 nanoseconds) answer what they say, and never
// change what the unbounded list answers to everyone, on this node or on
// another one sharing Redis.
func TestNoCachePoisoningThroughRangeBounds(t *testing.T) {
	t.Parallel()
	env, a := seeded(t)
	b := env.StartNode(t, apptest.NodeOptions{})
	want := count(t, env, "")
	for _, bound := range []string{
		"to=1970-01-01T00:00:00Z", "to=0001-01-01T00:00:00Z", "to=0001-01-01", "from=1970-01-01T00:00:00Z",
		"to=2262-04-12T00:00:00Z", "to=2554-07-21T23:34:33Z", "to=9999-12-31T23:59:59Z", "to=1677-09-21T00:12:44Z",
		"from=0001-01-01&to=1970-01-01", "from=1677-09-21T00:12:44Z&to=2554-07-21T23:34:33Z",
	} {
		v, _ := url.ParseQuery(bound)
		where, args := "WHERE true", []any{}
		if from := v.Get("from"); from != "" {
			args = append(args, from)
			where += " AND ts >= $1::timestamptz"
		}
		if to := v.Get("to"); to != "" {
			args = append(args, to)
			where += " AND ts < $" + string(rune('0'+len(args))) + "::timestamptz"
		}
		var lr listResp
		r := a.Get(t, "/attestations?"+bound)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", bound, r.Status, r.Body)
		}
		r.JSON(t, &lr)
		if w := count(t, env, where, args...); lr.Pagination.Total != w {
			t.Errorf("%s: total %d, want %d", bound, lr.Pagination.Total, w)
		}
		for i, node := range []*apptest.Node{a, b} {
			var all listResp
			node.Get(t, "/attestations").JSON(t, &all)
			if all.Pagination.Total != want || len(all.Data) != 20 {
				t.Fatalf("after %s, node %d answers total %d with %d rows, want %d with 20",
					bound, i, all.Pagination.Total, len(all.Data), want)
			}
		}
	}
}

// TestRangeLimits: instants outside years 0001..9999 in UTC, offsets that
// are not RFC 3339, and from after to are 400 whatever the values; a
// fractional bound selects what the next whole second does.
func TestRangeLimits(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	for _, bad := range []string{
		"to=0000-12-31", "to=10000-01-01", "to=0001-01-01T00:00:00%2B00:01", "to=9999-12-31T23:59:59.5Z",
		"to=2026-01-01T00:00:00%2B24:00", "to=2026-01-01T00:00:00%2B23:60", "to=2026-01-01T23:59:60Z",
		"from=9999-12-31&to=0001-01-01", "from=2262-04-12T00:00:00Z&to=2262-04-11T23:59:59Z",
		"from=2026-01-01T00:00:00.000000001Z&to=2026-01-01T00:00:00Z",
		"to=2026-01-01T00:00:00" + "00000000000000000000000000000000000000000000000000000000Z",
	} {
		if r := node.Get(t, "/attestations?"+bad); r.Status != 400 || r.ErrorCode() != "INVALID_PARAM" {
			t.Errorf("%s: %d %s", bad, r.Status, r.Body)
		}
	}
	var ts string
	if err := env.Store.Pool().QueryRow(t.Context(),
		"SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') FROM attestations ORDER BY ts OFFSET 100 LIMIT 1").Scan(&ts); err != nil {
		t.Fatal(err)
	}
	// Just after an attestation's second: excludes it as a lower bound,
	// includes it as an upper one, however far past the nanosecond.
	for _, tc := range []struct{ query, where string }{
		{"from=" + ts + ".0000000001Z", "WHERE ts >= $1::timestamptz + interval '1 second'"},
		{"to=" + ts + ".0000000001Z", "WHERE ts < $1::timestamptz + interval '1 second'"},
		{"from=" + ts + ".5Z", "WHERE ts >= $1::timestamptz + interval '1 second'"},
	} {
		var lr listResp
		node.Get(t, "/attestations?"+tc.query).JSON(t, &lr)
		if w := count(t, env, tc.where, ts+"Z"); lr.Pagination.Total != w {
			t.Errorf("%s: total %d, want %d", tc.query, lr.Pagination.Total, w)
		}
	}
}
