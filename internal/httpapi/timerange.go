package httpapi

import (
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/store"
)

// MinTime and MaxTime bound the accepted instants: from
// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, in UTC (an offset may not
// carry a date outside those years).
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// maxTimeLen bounds a date-time before it is parsed (RFC 3339 with a
// generous fraction), and the excerpt of a bad one in the message.
const maxTimeLen = 64

// ParseTime parses the query parameter name: an RFC 3339 date-time
// (offset within ±23:59; T and Z in either case; no leap second) or a
// YYYY-MM-DD date (midnight UTC), between 0001-01-01T00:00:00Z and
// 9999-12-31T23:59:59Z once in UTC. Fractions beyond nanoseconds are never
// rounded down: a value after the instant it names by less than 1 ns reads
// as the next nanosecond, so a bound keeps its side of every timestamp.
func ParseTime(name, v string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, apierror.Invalid("%s must be an RFC 3339 date-time (2026-11-21T10:00:00Z) or a date (2026-11-21) "+
			"from year 0001 to 9999 in UTC, got %q", name, excerpt.Of(v, maxTimeLen))
	}
	if len(v) > maxTimeLen {
		return bad()
	}
	t, ok := parseRFC3339(v)
	if !ok || t.Before(MinTime) || t.After(MaxTime) {
		return bad()
	}
	return t, nil
}

// parseRFC3339 parses strictly (time.Parse accepts offsets like +24:00 and
// drops digits past nanoseconds).
func parseRFC3339(v string) (time.Time, bool) {
	num := func(s string) (int, bool) {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, len(s) > 0
	}
	if len(v) < 10 || v[4] != '-' || v[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := num(v[0:4])
	mo, ok2 := num(v[5:7])
	d, ok3 := num(v[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return time.Time{}, false
	}
	if len(v) == 10 {
		return time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC), true
	}
	rest := v[10:]
	if len(rest) < 10 || (rest[0] != 'T' && rest[0] != 't') || rest[3] != ':' || rest[6] != ':' {
		return time.Time{}, false
	}
	h, ok1 := num(rest[1:3])
	mi, ok2 := num(rest[4:6])
	sec, ok3 := num(rest[7:9])
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest = rest[9:]
	nanos, beyond := 0, false
	if rest != "" && rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if i <= 9 {
				nanos = nanos*10 + int(rest[i]-'0')
			} else if rest[i] != '0' {
				beyond = true
			}
			i++
		}
		if i == 1 {
			return time.Time{}, false
		}
		for j := i; j <= 9; j++ {
			nanos *= 10
		}
		rest = rest[i:]
	}
	var offset int
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, nanos, time.UTC).Add(-time.Duration(offset) * time.Second)
	if beyond {
		t = t.Add(time.Nanosecond)
	}
	return t, true
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// ParseRange reads the from and to query parameters (either may be
// absent) into a half-open range, from <= timestamp < to, normalised to
// whole seconds: timestamps are whole seconds, so a fractional bound
// selects what the next whole second does. from after to is a 400.
func ParseRange(p map[string]string) (store.Range, error) {
	from, hasFrom := p["from"]
	to, hasTo := p["to"]
	return ParseBounds(from, hasFrom, to, hasTo)
}

// ParseBounds is ParseRange of values already read (hasFrom, hasTo: given).
func ParseBounds(from string, hasFrom bool, to string, hasTo bool) (store.Range, error) {
	var r store.Range
	var err error
	if hasFrom {
		if r.From, err = parseBound("from", from); err != nil {
			return r, err
		}
	}
	if hasTo {
		if r.To, err = parseBound("to", to); err != nil {
			return r, err
		}
	}
	if r.From != nil && r.To != nil && r.From.After(*r.To) {
		return r, apierror.Invalid("from must not be after to (the range is from <= timestamp < to)")
	}
	return r, nil
}

// parseBound parses one bound, rounded up to the second.
func parseBound(name, v string) (*time.Time, error) {
	t, err := ParseTime(name, v)
	if err != nil {
		return nil, err
	}
	if c := t.Truncate(time.Second); c.Before(t) {
		t = c.Add(time.Second)
	}
	return &t, nil
}
