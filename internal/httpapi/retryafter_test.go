package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// maxRetryAfter is the webhook worker's bound, whose table this was.
const maxRetryAfter = time.Hour

// TestRetryAfterBounds: a huge delay-seconds (which overflowed to a
// negative wait before) is the bound; signs, spaces inside, fractions and
// dates in the past are no wait.
func TestRetryAfterBounds(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"9223372036": maxRetryAfter, "9223372037": maxRetryAfter, "18446744074": maxRetryAfter, "9999999999999": maxRetryAfter, "99999999999999999999999": maxRetryAfter,
		"3600": time.Hour, "3601": maxRetryAfter, strings.Repeat("9", 100): maxRetryAfter, "0": 0, " 7 ": 7 * time.Second, "+5": 0, "1.5": 0, "5 s": 0,
		now.Add(48 * time.Hour).Format(http.TimeFormat): maxRetryAfter,
		now.Add(2 * time.Second).Format(time.RFC850):    2 * time.Second,
	} {
		if got := ParseRetryAfter(v, now, maxRetryAfter); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

// FuzzRetryAfter: whatever the header, the wait is within [0, the bound].
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "120", "-5", "9223372036854775807", "99999999999", "Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", " 1", "1e9", "0x10"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := ParseRetryAfter(v, now, maxRetryAfter); d < 0 || d > maxRetryAfter {
			t.Fatalf("Retry-After %q: %s", v, d)
		}
	})
}
