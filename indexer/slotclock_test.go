package indexer

import (
	"testing"
	"time"
)

func TestSlotClockLag(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name    string
		chain   [][2]int // slot, second seen
		indexed uint64
		now     int
		want    time.Duration
	}{
		{"nothing seen", nil, 0, 10, 0},
		{"caught up", [][2]int{{100, 0}, {105, 2}}, 105, 10, 0},
		{"ahead of what was seen", [][2]int{{100, 0}}, 120, 10, 0},
		{"behind the newest", [][2]int{{100, 0}, {105, 2}, {110, 4}}, 105, 10, 6 * time.Second},
		{"behind all", [][2]int{{100, 0}, {105, 2}}, 50, 10, 10 * time.Second},
		{"an older slot seen later is ignored", [][2]int{{100, 0}, {90, 5}, {105, 6}}, 99, 10, 10 * time.Second},
		{"a repeat keeps the first sight", [][2]int{{100, 0}, {100, 5}}, 99, 10, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c slotClock
			for _, s := range tc.chain {
				c.chainAt(uint64(s[0]), at(s[1]))
			}
			c.indexedTo(tc.indexed)
			if got := c.lag(at(tc.now)); got != tc.want {
				t.Errorf("lag %s, want %s", got, tc.want)
			}
		})
	}
	// Bounded: the oldest sight is dropped past slotClockSize.
	var c slotClock
	for i := range slotClockSize + 10 {
		c.chainAt(uint64(i+1), at(i))
	}
	if len(c.seen) != slotClockSize || c.seen[0].slot != 11 {
		t.Fatalf("%d remembered, oldest %d", len(c.seen), c.seen[0].slot)
	}
}
