package stream

import (
	"cmp"
	"errors"
	"slices"
	"time"
)

// errEvicted: makeRoom cut the stream's write to free what it held.
var errEvicted = errors.New("stream evicted to make room in the buffer budget")

// evictAfter is how long a write must have been blocked for its stream to
// be evicted when the budget has no room: a client that has not taken 32
// KiB (the socket's send buffer) in that long reads slower than 32 KiB/s.
const evictAfter = time.Second

// makeRoom ends, to free what they hold, the streams whose write has been
// blocked for evictAfter, longest blocked first, until need bytes of the
// budget would be free, and waits (at most half a second) for them to be:
// the node's budget goes to clients that read, not to those that hold it
// without reading. It reports whether it ended any. The streams it ends
// count as ended for the budget; their clients, not reading, get no event
// (their connection is closed, and a reconnecting client resumes from its
// last id as after any other end).
func (h *Handler) makeRoom(self *stream, need int64) bool {
	type victim struct {
		s     *stream
		since int64
	}
	limit := time.Now().UnixNano() - h.evictAfter.Load()
	var vs []victim
	h.mu.Lock()
	for s := range h.live {
		if w := s.writing.Load(); s != self && s.tcp != nil && w != 0 && w < limit && s.holds.Load() > 0 && !s.evicted.Load() {
			vs = append(vs, victim{s, w})
		}
	}
	h.mu.Unlock()
	if len(vs) == 0 {
		return false
	}
	slices.SortFunc(vs, func(a, b victim) int { return cmp.Compare(a.since, b.since) })
	freed, n := h.budget.max-h.budget.Held(), 0 // free already, victims chosen
	for ; n < len(vs) && freed < need; n++ {
		freed += vs[n].s.holds.Load()
		vs[n].s.evicted.Store(true)
	}
	for range 50 { // until what they held is given back
		// Their writes are cut on the socket itself: the connection's own
		// SetWriteDeadline waits for the next write to apply. Again each
		// time: a write that was starting may have applied its own.
		for _, v := range vs[:n] {
			if v.s.writing.Load() != 0 {
				_ = v.s.tcp.SetWriteDeadline(time.Now())
			}
		}
		if h.budget.max-h.budget.Held() >= need {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
