package batchsize

import (
	"testing"
)

func TestBatchSize(t *testing.T) {
	type step struct {
		timedOut bool // else applied
		records  int  // of the batch that timed out
		size     int
		changed  bool
	}
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"stays at the maximum while batches apply", 8, []step{{false, 0, 8, false}, {false, 0, 8, false}}},
		{"halves down to one transaction's worth", 5, []step{{true, 1 << 20, 2, true}, {true, 1 << 20, 1, true}, {true, 1 << 20, 1, false}}},
		{"doubles back after ten in a row, up to the maximum", 6, []step{
			{true, 1 << 20, 3, true}, {true, 1 << 20, 1, true},
			{false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 1, false},
			{false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 1, false}, {false, 0, 2, true},
			{false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false},
			{false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 4, true},
			{false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 4, false},
			{false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 4, false}, {false, 0, 6, true}}},
		{"halves from the batch that timed out when it was smaller", 5000, []step{
			{true, 600, 300, true}, {true, 1 << 20, 150, true}, {true, 100, 50, true}}},
		{"a time-out starts the count again", 4, []step{
			{true, 1 << 20, 2, true}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false},
			{false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false}, {false, 0, 2, false},
			{true, 1 << 20, 1, true}, {false, 0, 1, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.max)
			for i, s := range tc.steps {
				var size int
				var changed bool
				if s.timedOut {
					size, changed = b.TimedOut(s.records)
				} else {
					size, changed = b.Applied()
				}
				if size != s.size || changed != s.changed || b.Now() != s.size {
					t.Fatalf("step %d (timed out %v): size %d changed %v now %d, want %d %v", i, s.timedOut, size, changed, b.Now(), s.size, s.changed)
				}
			}
		})
	}
}
