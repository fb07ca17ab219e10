package stream

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/apierror"
)

// sendBuffer is the socket send buffer of a stream: events are small and
// a client that stops reading must be found out (and dropped) before the
// kernel holds megabytes for it.
const sendBuffer = 32 << 10

// flushAt is how many bytes a stream gathers before a write.
const flushAt = 16 << 10

// bufferRoom is the capacity of a stream's write buffer (bufPool): a
// chunk, and room for the event that passes flushAt.
const bufferRoom = flushAt + 4096

// chunkHead is the room kept at the start of buf for the chunk's size:
// six hex digits (leading zeros are valid chunk-size syntax) and CRLF.
const chunkHead = 8

var (
	retryFrame = []byte("retry: " + strconv.Itoa(RetryMillis) + "\n\n")
	heartbeat  = []byte(": keep-alive\n\n")
	lastChunk  = []byte("0\r\n\r\n")
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, bufferRoom); return &b }}

// errBufferFull: the node's budget has no room for what the stream would
// hold next; it ends with a CodeBufferFull error event.
var errBufferFull = errors.New("stream buffer budget full")

func errorFrame(code, message string) []byte {
	b, _ := json.Marshal(apierror.Body(code, message))
	return appendData([]byte("event: error\n"), b)
}

type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

// add appends p to the pending chunk, taking a write buffer first when
// the stream has none (errBufferFull when the node's budget has no room).
func (s *stream) add(p []byte) error {
	if s.bp == nil && !s.grab(false) {
		return errBufferFull
	}
	s.buf = append(s.buf, p...)
	if n := int64(cap(s.buf)); n > s.charged { // grew for an event larger than its room
		s.h.budget.force(n - s.charged)
		s.holds.Add(n - s.charged)
		s.charged = n
	}
	return nil
}

// grab gives the stream a write buffer (bufPool's hold bufferRoom bytes
// each), its bytes taken from the node's budget unless paid says they
// were; false when the budget has no room for them.
func (s *stream) grab(paid bool) bool {
	if !paid && !s.h.budget.take(bufferRoom) && !(s.h.makeRoom(s, bufferRoom) && s.h.budget.take(bufferRoom)) {
		return false
	}
	s.bp = bufPool.Get().(*[]byte)
	s.buf, s.charged = (*s.bp)[:chunkHead], bufferRoom
	s.holds.Add(bufferRoom)
	return true
}

// release gives the write buffer back (to the pool, and its bytes to the
// node's budget), dropping what it still holds.
func (s *stream) release() {
	if s.bp == nil {
		return
	}
	s.h.budget.give(s.charged)
	s.holds.Add(-s.charged)
	if cap(s.buf) == bufferRoom { // one that grew for a large event is left to the collector
		*s.bp = s.buf[:0]
		bufPool.Put(s.bp)
	}
	s.bp, s.buf, s.charged = nil, nil, 0
}

// shed ends the stream for the node's budget: its buffer goes back (the
// client resumes from its last id, which precedes anything unsent), and
// the client is told so in an error event, written within a second
// without a buffer.
func (s *stream) shed() {
	s.release()
	frame := errorFrame(CodeBufferFull, "this node holds the most it buffers for streams: reconnect with your last event id (Last-Event-ID) to resume")
	b := frame
	if s.chunked {
		b = append(strconv.AppendInt(nil, int64(len(frame)), 16), '\r', '\n')
		b = append(append(b, frame...), '\r', '\n')
		b = append(b, lastChunk...)
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = s.conn.Write(b)
}

// pending is how many bytes wait to be written.
func (s *stream) pending() int { return max(len(s.buf)-chunkHead, 0) }

// flush writes the pending bytes as one chunk, within the write timeout.
func (s *stream) flush() error {
	n := s.pending()
	if n <= 0 {
		return nil
	}
	if !s.chunked {
		err := s.writeRaw(s.buf[chunkHead:])
		s.buf = s.buf[:chunkHead]
		return err
	}
	const hex = "0123456789abcdef"
	for i := 5; i >= 0; i-- {
		s.buf[i] = hex[n&0xf]
		n >>= 4
	}
	s.buf[6], s.buf[7] = '\r', '\n'
	s.buf = append(s.buf, '\r', '\n')
	err := s.writeRaw(s.buf)
	s.buf = s.buf[:chunkHead]
	return err
}

func (s *stream) writeRaw(b []byte) error {
	now := time.Now()
	s.writing.Store(now.UnixNano())
	defer s.writing.Store(0)
	_ = s.conn.SetWriteDeadline(now.Add(s.h.cfg.WriteTimeout))
	if s.evicted.Load() { // makeRoom cuts the write if it sets evicted later
		return errEvicted
	}
	if _, err := s.conn.Write(b); err != nil {
		if s.evicted.Load() {
			return errEvicted
		}
		return writeError{err}
	}
	return nil
}

// end closes the chunked body (the client sees a clean end, not a reset).
func (s *stream) end() {
	if !s.chunked {
		return
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = s.conn.Write(lastChunk)
}
