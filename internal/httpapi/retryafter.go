package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfterDate bounds a Retry-After value read as an HTTP date (the
// longest of the three formats is 30 characters).
const maxRetryAfterDate = 64

// ParseRetryAfter reads a Retry-After value (RFC 9110: delay-seconds, a
// run of digits, or an HTTP date) as a wait from now, at most max; 0 when
// absent, invalid or not in the future. It never returns a negative wait,
// whatever the value: any number of seconds beyond max (even one too large
// to represent) is max. The caller chooses max: how long it is willing
// to wait for the server that sent it.
func ParseRetryAfter(v string, now time.Time, max time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if allDigits(v) {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(max/time.Second) {
			return max // overflows or beyond the bound
		}
		return time.Duration(n) * time.Second
	}
	if len(v) > maxRetryAfterDate {
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), max)
	}
	return 0
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
