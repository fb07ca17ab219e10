package stream

import (
	"context"
	"unsafe"

	"github.com/attestd/attestd/internal/store"
)

// catchUpBatch is how many rows one catch-up read of PostgreSQL takes at
// most; the stream's byte budget may make it fewer.
const catchUpBatch = 500

// minCatchUp is the fewest bytes a catch-up read is worth taking from the
// node's budget (a few rows).
const minCatchUp = 4 << 10

// rowOverhead is what a catch-up row costs besides its strings and data.
const rowOverhead = int64(unsafe.Sizeof(store.StreamEvent{}))

// catchUp gives the client the log rows after its position up to last from
// PostgreSQL (it is behind the ring), one read. The rows a read may hold
// are taken from the node's budget first: at most the stream's own budget
// less its write buffer, and never the last quarter of the node's, which
// is left for the write buffers of streams that keep up. The read asks
// for as many rows as the bytes taken hold (at the size rows lately had),
// and keeps those that fit; the rest are read again next time. A client
// that does not read thus holds at most its budget, and a node at most
// its own. Without room, streams blocked on clients that take nothing are
// ended for it (makeRoom); failing that, this one ends with the resumable
// error event.
func (s *stream) catchUp(ctx context.Context, last uint64, gone <-chan struct{}) error {
	room, err := s.reserve(gone)
	if err != nil {
		return err
	}
	s.holds.Add(room)
	defer func() { s.h.budget.give(room); s.holds.Add(-room) }()
	limit := int(min(room/max(s.h.rowSize.Load(), 64), catchUpBatch))
	rows, next, full, err := s.h.hub.st.StreamEvents(ctx, s.pos, last, s.filter, max(limit, 1))
	<-s.h.hub.catchUp
	if err != nil {
		return err
	}
	kept, held := s.fit(rows, room)
	if held > room { // one row larger than all the room: held all the same
		s.h.budget.force(held - room)
		s.holds.Add(held - room)
		room = held
	}
	if kept < len(rows) {
		rows, next, full = rows[:kept], rows[kept-1].Seq, true
	}
	if err := s.sendRows(rows); err != nil {
		return err
	}
	if full {
		s.pos = next
	} else {
		s.pos = last
	}
	return nil
}

// readSlot takes one of the node's PostgreSQL read slots, unless the
// client goes or the node drains first.
func (s *stream) readSlot(gone <-chan struct{}) error {
	select {
	case s.h.hub.catchUp <- struct{}{}:
		return nil
	case <-gone:
		return errGone
	case <-s.h.hub.closing:
		return errDrained
	}
}

// reserve takes a read slot and the room a catch-up read may hold from
// the node's budget (and the stream's write buffer, when it has none),
// ending blocked streams for it when there is none (errBufferFull when
// that frees nothing). On success the slot is held: the caller gives it
// back after its read, and room to the budget when done.
func (s *stream) reserve(gone <-chan struct{}) (room int64, err error) {
	if err := s.readSlot(gone); err != nil {
		return 0, err
	}
	cfg := s.h.cfg
	var buffer int64 // the write buffer's bytes, when it must be taken too
	if s.bp == nil {
		buffer = bufferRoom
	}
	take := func() int64 {
		return s.h.budget.takeUpTo(minCatchUp+buffer, cfg.BufferPerStream-s.charged, s.h.budget.max/4)
	}
	room = take()
	if room == 0 { // end blocked streams to make room, without a read's slot meanwhile
		<-s.h.hub.catchUp
		if !s.h.makeRoom(s, minCatchUp+buffer+s.h.budget.max/4) {
			return 0, errBufferFull
		}
		if err := s.readSlot(gone); err != nil {
			return 0, err
		}
		if room = take(); room == 0 {
			<-s.h.hub.catchUp
			return 0, errBufferFull
		}
	}
	if buffer > 0 {
		s.grab(true)
		room -= buffer
	}
	return room, nil
}

// fit is how many of rows, from the first, the room holds (the first
// always), and the bytes they hold; it records the size of the rows read
// for the next reads' counts.
func (s *stream) fit(rows []store.StreamEvent, room int64) (kept int, held int64) {
	var all int64 // the bytes of all the rows
	for i := range rows {
		n := rowBytes(&rows[i])
		all += n
		if kept == i && (i == 0 || held+n <= room) {
			held += n
			kept++
		}
	}
	if len(rows) > 0 { // the size of rows, for the next reads' counts
		old := s.h.rowSize.Load()
		s.h.rowSize.Store((old*3 + all/int64(len(rows))) / 4)
	}
	return kept, held
}

// sendRows writes the catch-up rows as events, flushing as the buffer
// fills, dropping each row once its bytes are in the buffer.
func (s *stream) sendRows(rows []store.StreamEvent) error {
	for i := range rows {
		if err := s.add(newEvent(&rows[i]).Frame); err != nil {
			return err
		}
		rows[i] = store.StreamEvent{} // its bytes are in the buffer now
		s.h.m.sent.Inc()
		if s.pending() >= flushAt {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowBytes is the memory a catch-up row holds.
func rowBytes(r *store.StreamEvent) int64 {
	return rowOverhead + int64(len(r.Data)+len(r.PDA)+len(r.AgentPDA))
}
