package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Error codes of the error event.
const (
	// CodeCursorTooOld: the log no longer holds the changes after the
	// cursor (older than ATTESTD_STREAM_RETENTION).
	CodeCursorTooOld = "CURSOR_TOO_OLD"
	// CodeCursorUnknown: no attestation indexed here has the cursor.
	CodeCursorUnknown = "CURSOR_UNKNOWN"
	// CodeBufferFull: the node holds the most bytes it buffers for its
	// streams (ATTESTD_STREAM_BUFFER_TOTAL_MB). Unlike the cursor errors,
	// the client resumes: it reconnects with its last id after the retry
	// delay.
	CodeBufferFull = "STREAM_BUFFER_FULL"
)

// RetryMillis is the reconnection delay every stream announces first.
const RetryMillis = 2000

// MaxCursorLen bounds the cursor (Last-Event-ID or after) before it is
// decoded: the cursors this API issues are under 100 characters.
const MaxCursorLen = 256

// sendBuffer is the socket send buffer of a stream: events are small and
// a client that stops reading must be found out (and dropped) before the
// kernel holds megabytes for it.
const sendBuffer = 32 << 10

// flushAt is how many bytes a stream gathers before a write.
const flushAt = 16 << 10

// catchUpBatch is how many rows one catch-up read of PostgreSQL takes at
// most; the stream's byte budget may make it fewer.
const catchUpBatch = 500

// bufferRoom is the capacity of a stream's write buffer (bufPool): a
// chunk, and room for the event that passes flushAt.
const bufferRoom = flushAt + 4096

// minCatchUp is the fewest bytes a catch-up read is worth taking from the
// node's budget (a few rows).
const minCatchUp = 4 << 10

// rowOverhead is what a catch-up row costs besides its strings and data.
const rowOverhead = int64(unsafe.Sizeof(store.StreamEvent{}))

// Handler answers GET /attestations/stream.
type Handler struct {
	hub     *Hub
	cfg     Config
	m       *metrics
	budget  *budget      // the bytes the node's streams hold (heldLimit)
	rowSize atomic.Int64 // bytes a catch-up row takes, as lately read (sizes catch-up reads)
	ip      func(*fiber.Ctx) netip.Addr
	mu      sync.Mutex
	perIP   map[netip.Prefix]int
	open    int
	live    map[*stream]struct{} // the streams running, for makeRoom
	// evictAfter is how long a write must have been blocked for its
	// stream to be ended by makeRoom (ns; evictAfter, tests change it).
	evictAfter atomic.Int64
	streams    sync.WaitGroup
}

// Deps are what a Handler works with.
type Deps struct {
	Hub *Hub
	// ClientIP resolves the client of a request as the rate limiter does
	// (nil: the socket peer).
	ClientIP   func(*fiber.Ctx) netip.Addr
	Registerer prometheus.Registerer
}

// New returns the handler of the route (Handler.Serve).
func New(o Deps) *Handler {
	b := &budget{max: heldLimit(o.Hub.cfg)}
	h := &Handler{hub: o.Hub, cfg: o.Hub.cfg, m: newMetrics(o.Registerer, b), budget: b, ip: o.ClientIP, perIP: map[netip.Prefix]int{},
		live: map[*stream]struct{}{}}
	h.rowSize.Store(1 << 10)
	h.evictAfter.Store(int64(evictAfter))
	if h.ip == nil {
		h.ip = func(c *fiber.Ctx) netip.Addr {
			a, _ := netip.AddrFromSlice(c.Context().RemoteIP())
			return a.Unmap()
		}
	}
	return h
}

// request is a validated stream request.
type request struct {
	filter store.StreamFilter
	after  *store.Cursor
}

// streamParams are the route's query parameters.
var streamParams = []string{"agentPda", "actionType", "after", "actionHash", "txSignature"}

// parse validates the query (the list's rules for agentPda and actionType)
// and the cursor: Last-Event-ID when sent (a reconnecting EventSource
// sends it with the URL it first opened, ?after= included), else after.
func parse(c *fiber.Ctx) (request, error) {
	var r request
	q, err := httpapi.QueryParams(c, streamParams...)
	if err != nil {
		return r, err
	}
	if v, ok := q["agentPda"]; ok {
		if r.filter.AgentPDA, err = httpapi.ParseAddress("agentPda", v); err != nil {
			return r, err
		}
	}
	if v, ok := q["actionType"]; ok {
		t, err := httpapi.ParseActionType(v)
		if err != nil {
			return r, err
		}
		r.filter.ActionType = &t
	}
	if v, ok := q["actionHash"]; ok {
		h, err := httpapi.ParseActionHash(v)
		if err != nil {
			return r, err
		}
		r.filter.ActionHash = h[:]
	}
	if v, ok := q["txSignature"]; ok {
		if r.filter.TxSignature, err = httpapi.ParseTxSignature(v); err != nil {
			return r, err
		}
	}
	cur, name := q["after"], "after"
	if lines := c.Request().Header.PeekAll("Last-Event-ID"); len(lines) > 1 {
		return r, apierror.Invalid("Last-Event-ID sent more than once")
	} else if len(lines) == 1 && len(lines[0]) > 0 {
		cur, name = string(lines[0]), "Last-Event-ID"
	}
	if cur != "" {
		if r.after, err = ParseCursor(cur); err != nil {
			return r, apierror.Invalid("%s is not a cursor this API issued: pass an event's id or pagination.nextCursor unchanged", name)
		}
	}
	return r, nil
}

// ParseCursor decodes a stream cursor (an attestation event's id, or a
// list's pagination.nextCursor): bounded before it is decoded.
func ParseCursor(s string) (*store.Cursor, error) {
	if len(s) > MaxCursorLen {
		return nil, errors.New("cursor too long")
	}
	return httpapi.DecodeCursor(s)
}

var (
	errDraining = apierror.Unavailable("this node is stopping; reconnect (another node answers)")
	errNotReady = apierror.Unavailable("the stream is not ready yet (the database does not answer); retry shortly")
)

// Serve answers the route.
func (h *Handler) Serve(c *fiber.Ctx) error {
	r, err := parse(c)
	if err != nil {
		return err
	}
	hdr := &c.Response().Header
	hdr.Set(fiber.HeaderCacheControl, httpcache.NoStore)
	hdr.Set("X-Accel-Buffering", "no")
	if c.Method() == fiber.MethodHead {
		hdr.SetContentType("text/event-stream")
		return nil
	}
	if h.hub.Draining() {
		c.Set(fiber.HeaderRetryAfter, "1")
		return errDraining
	}
	pos, ready := h.hub.position()
	if !ready {
		c.Set(fiber.HeaderRetryAfter, "2")
		return errNotReady
	}
	key := clientKey(h.ip(c))
	if err := h.acquire(c, key); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			h.release(key)
		}
	}()
	var fail []byte // an error event instead of the stream
	// Reads of PostgreSQL to start a stream are bounded per node (as the
	// catch-ups are): a fleet of clients reconnecting at once queues here.
	select {
	case h.hub.catchUp <- struct{}{}:
		defer func() { <-h.hub.catchUp }()
	case <-time.After(5 * time.Second):
		c.Set(fiber.HeaderRetryAfter, "2")
		return apierror.Unavailable("too many streams are starting on this node; retry shortly")
	}
	if r.after == nil {
		// Live from now: the log's head, which the hub may not have read yet
		// (its position, when PostgreSQL does not answer).
		if head, err := h.hub.st.StreamHead(c.UserContext()); err == nil {
			pos = max(pos, head)
		}
	} else {
		seq, found, known, err := h.hub.st.StreamPosition(c.UserContext(), *r.after)
		switch {
		case err != nil:
			c.Set(fiber.HeaderRetryAfter, "2")
			return httpapi.LoadError(err)
		case found:
			pos = seq
		case known:
			fail = errorFrame(CodeCursorTooOld, "the stream no longer holds the changes after this cursor (it keeps "+
				h.cfg.Retention.String()+"): page GET /attestations with it, then open the stream without one")
		default:
			fail = errorFrame(CodeCursorUnknown, "no attestation indexed here has this cursor: open the stream without one")
		}
	}
	hdr.SetContentType("text/event-stream")
	chunked := c.Request().Header.IsHTTP11()
	if chunked {
		hdr.SetContentLength(-1)
	} else {
		hdr.SetContentLength(-2) // HTTP/1.0 knows no chunks: the body ends when the connection closes
		hdr.Del(fiber.HeaderTransferEncoding)
	}
	hdr.SetConnectionClose()
	head := append([]byte(nil), hdr.Header()...)
	tcp := httpapi.TCPConn(c.Context().Conn())
	ok = true
	h.streams.Add(1)
	h.m.open.Inc()
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(conn net.Conn) {
		defer h.streams.Done()
		defer h.m.open.Dec()
		defer h.release(key)
		s := &stream{h: h, conn: conn, tcp: tcp, filter: r.filter, pos: pos, chunked: chunked}
		h.mu.Lock()
		h.live[s] = struct{}{}
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.live, s)
			h.mu.Unlock()
		}()
		why := s.run(head, fail)
		h.m.ended.WithLabelValues(string(why)).Inc()
	})
	return nil
}

func clientKey(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// acquire takes a slot of the node and one of the client's.
func (h *Handler) acquire(c *fiber.Ctx, key netip.Prefix) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open >= h.cfg.MaxStreams {
		h.m.refused.WithLabelValues("node").Inc()
		c.Set(fiber.HeaderRetryAfter, "5")
		return apierror.Unavailable("this node holds the most streams it allows; retry shortly")
	}
	if h.perIP[key] >= h.cfg.MaxPerIP {
		h.m.refused.WithLabelValues("per_ip").Inc()
		c.Set(fiber.HeaderRetryAfter, "5")
		return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
			"your address holds %d open streams, the most allowed; close one (one stream carries every filter's events: filter on the client)", h.cfg.MaxPerIP)
	}
	h.open++
	h.perIP[key]++
	return nil
}

func (h *Handler) release(key netip.Prefix) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open--
	if h.perIP[key]--; h.perIP[key] <= 0 {
		delete(h.perIP, key)
	}
}

// Buffered is how many bytes the node's streams hold for their clients.
func (h *Handler) Buffered() int64 { return h.budget.Held() }

// Open is the number of open streams.
func (h *Handler) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

func errorFrame(code, message string) []byte {
	b, _ := json.Marshal(apierror.Body(code, message))
	return appendData([]byte("event: error\n"), b)
}

// stream is one client's stream, on the connection it took over.
type stream struct {
	h      *Handler
	conn   net.Conn
	tcp    *net.TCPConn
	filter store.StreamFilter
	pos    uint64 // the last log row this client was given (or skipped)
	// The write buffer, from bufPool, while the stream has something to
	// write (nil while it waits: an idle stream holds no buffer). Its
	// capacity is charged to the node's budget.
	bp      *[]byte
	buf     []byte
	charged int64
	// holds mirrors the bytes of the budget the stream holds (its buffer
	// and a catch-up's room); writing is when its current write began
	// (unix ns, 0 outside writes); evicted says makeRoom cut its write.
	// Other streams read them to find what to evict.
	holds   atomic.Int64
	writing atomic.Int64
	evicted atomic.Bool
	// chunked: the body is sent in chunks (HTTP/1.1); otherwise as is,
	// ended by closing the connection (HTTP/1.0).
	chunked bool
}

var (
	retryFrame = []byte("retry: " + strconv.Itoa(RetryMillis) + "\n\n")
	heartbeat  = []byte(": keep-alive\n\n")
	lastChunk  = []byte("0\r\n\r\n")
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, bufferRoom); return &b }}

// errBufferFull: the node's budget has no room for what the stream would
// hold next; it ends with a CodeBufferFull error event.
var errBufferFull = errors.New("stream buffer budget full")

// run streams until the client goes, the lifetime ends, the node drains
// or a write fails; it returns why it ended.
func (s *stream) run(head, fail []byte) (why endReason) {
	if s.tcp != nil {
		_ = s.tcp.SetWriteBuffer(sendBuffer)
	}
	gone, stopWatching := s.watchClient()
	defer stopWatching()
	defer s.release()
	if why, ended := s.open(head, fail); ended {
		return why
	}
	return s.follow(gone)
}

// watchClient notices the client closing (a stream's request has no body
// to read): gone is closed then. stop wakes the reader and waits for it
// (fasthttp reuses its buffer once the handler returns).
func (s *stream) watchClient() (gone <-chan struct{}, stop func()) {
	closed := make(chan struct{})
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		defer close(closed)
		var b [128]byte
		for {
			if _, err := s.conn.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return closed, func() {
		if s.tcp != nil {
			_ = s.tcp.SetReadDeadline(time.Now())
		} else {
			_ = s.conn.Close()
		}
		reader.Wait()
	}
}

// open writes the response head and the retry advice, and for a stream
// refused at its start the error event; ended says the stream is over
// already (why).
func (s *stream) open(head, fail []byte) (why endReason, ended bool) {
	if err := s.writeRaw(head); err != nil {
		return s.failed(err), true
	}
	if err := s.add(retryFrame); err != nil {
		return s.failed(err), true
	}
	if fail != nil {
		if err := s.add(fail); err != nil {
			return s.failed(err), true
		}
		_ = s.flush()
		s.end()
		return endError, true
	}
	if err := s.flush(); err != nil {
		return s.failed(err), true
	}
	return "", false
}

// follow sends the hub's events after the stream's position (catching up
// from PostgreSQL when it fell behind the ring) and a heartbeat when it
// is idle, until the stream ends; it returns why.
func (s *stream) follow(gone <-chan struct{}) endReason {
	cfg := s.h.cfg
	// Streams opened together (a node's restart) do not all end together.
	life := time.NewTimer(cfg.Lifetime - time.Duration(rand.Int64N(int64(cfg.Lifetime/10)+1)))
	defer life.Stop()
	hb := time.NewTimer(cfg.Heartbeat)
	defer hb.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		evs, last, covered, changed := s.h.hub.since(s.pos, 512)
		switch {
		case !covered:
			if err := s.catchUp(ctx, last, gone); err != nil {
				return s.failed(err)
			}
		case len(evs) > 0:
			if err := s.send(evs); err != nil {
				return s.failed(err)
			}
		default:
			why, ended, err := s.idle(changed, hb, life.C, gone)
			if err != nil {
				return s.failed(err)
			}
			if ended {
				return why
			}
		}
		if why, ended := s.ending(life.C, gone); ended {
			return why
		}
	}
}

// send writes the events the stream's filter matches, flushing as the
// buffer fills, and moves the stream's position past them.
func (s *stream) send(evs []*Event) error {
	for _, e := range evs {
		if !e.matches(s.filter) {
			continue
		}
		if err := s.add(e.Frame); err != nil {
			return err
		}
		s.h.m.sent.Inc()
		if s.pending() >= flushAt {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	s.pos = evs[len(evs)-1].Seq
	return nil
}

// idle flushes what is pending, lets go of the stream's buffer and waits
// for the next event, sending a heartbeat when none comes in time; ended
// says the stream is over (why).
func (s *stream) idle(changed <-chan struct{}, hb *time.Timer, life <-chan time.Time, gone <-chan struct{}) (why endReason, ended bool, err error) {
	every := s.h.cfg.Heartbeat
	if s.pending() > 0 {
		if err := s.flush(); err != nil {
			return "", false, err
		}
		hb.Reset(every)
	}
	s.release() // nothing to write until the next event
	select {
	case <-changed:
	case <-hb.C:
		if err := s.add(heartbeat); err != nil {
			return "", false, err
		}
		if err := s.flush(); err != nil {
			return "", false, err
		}
		hb.Reset(every)
	case <-life:
		s.end()
		return endLifetime, true, nil
	case <-s.h.hub.closing:
		s.end()
		return endDrain, true, nil
	case <-gone:
		return endClient, true, nil
	}
	return "", false, nil
}

// ending says whether the stream ends now, between batches (a busy stream
// still ends on these), and why, having flushed what it could.
func (s *stream) ending(life <-chan time.Time, gone <-chan struct{}) (why endReason, ended bool) {
	select {
	case <-s.h.hub.closing:
		_ = s.flush()
		s.end()
		return endDrain, true
	case <-life:
		_ = s.flush()
		s.end()
		return endLifetime, true
	case <-gone:
		return endClient, true
	default:
		return "", false
	}
}

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
	acquire := func() error {
		select {
		case s.h.hub.catchUp <- struct{}{}:
			return nil
		case <-gone:
			return errGone
		case <-s.h.hub.closing:
			return errDrained
		}
	}
	if err := acquire(); err != nil {
		return err
	}
	cfg := s.h.cfg
	var buffer int64 // the write buffer's bytes, when it must be taken too
	if s.bp == nil {
		buffer = bufferRoom
	}
	take := func() int64 {
		return s.h.budget.takeUpTo(minCatchUp+buffer, cfg.BufferPerStream-s.charged, s.h.budget.max/4)
	}
	room := take()
	if room == 0 { // end blocked streams to make room, without a read's slot meanwhile
		<-s.h.hub.catchUp
		if !s.h.makeRoom(s, minCatchUp+buffer+s.h.budget.max/4) {
			return errBufferFull
		}
		if err := acquire(); err != nil {
			return err
		}
		if room = take(); room == 0 {
			<-s.h.hub.catchUp
			return errBufferFull
		}
	}
	if buffer > 0 {
		s.grab(true)
		room -= buffer
	}
	s.holds.Add(room)
	defer func() { s.h.budget.give(room); s.holds.Add(-room) }()
	limit := int(min(room/max(s.h.rowSize.Load(), 64), catchUpBatch))
	rows, next, full, err := s.h.hub.st.StreamEvents(ctx, s.pos, last, s.filter, max(limit, 1))
	<-s.h.hub.catchUp
	if err != nil {
		return err
	}
	var held, all int64 // the bytes of the rows kept, of all
	kept := 0
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
	if held > room { // one row larger than all the room: held all the same
		s.h.budget.force(held - room)
		s.holds.Add(held - room)
		room = held
	}
	if kept < len(rows) {
		rows, next, full = rows[:kept], rows[kept-1].Seq, true
	}
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
	if full {
		s.pos = next
	} else {
		s.pos = last
	}
	return nil
}

// rowBytes is the memory a catch-up row holds.
func rowBytes(r *store.StreamEvent) int64 {
	return rowOverhead + int64(len(r.Data)+len(r.PDA)+len(r.AgentPDA))
}

var (
	errGone    = errors.New("client gone")
	errDrained = errors.New("draining")
)

// failed says why a stream ended on err.
func (s *stream) failed(err error) endReason {
	switch {
	case errors.Is(err, errDrained):
		s.end()
		return endDrain
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.h.m.dropped.Inc()
		return endSlow
	case errors.Is(err, errGone):
		return endClient
	case errors.Is(err, errBufferFull):
		s.shed()
		return endBudget
	case errors.Is(err, errEvicted):
		return endBudget // its client takes nothing: no event would reach it
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s.h.m.dropped.Inc()
		return endSlow
	}
	if _, ok := err.(writeError); ok {
		return endClient
	}
	s.h.hub.log.Warn("stream: ended on an error", "err", err)
	return endError
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

// chunkHead is the room kept at the start of buf for the chunk's size:
// six hex digits (leading zeros are valid chunk-size syntax) and CRLF.
const chunkHead = 8

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

// end closes the chunked body (the client sees a clean end, not a reset).
func (s *stream) end() {
	if !s.chunked {
		return
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = s.conn.Write(lastChunk)
}

// endReason is why a stream ended, as attestd_stream_ended_total{why}
// names it.
type endReason string

const (
	endClient   endReason = "client"   // the client went away
	endLifetime endReason = "lifetime" // its lifetime ran out (the client resumes)
	endDrain    endReason = "drain"    // the node drains
	endSlow     endReason = "slow"     // the client could not keep up
	endBudget   endReason = "budget"   // the node's stream buffer budget was full
	endError    endReason = "error"    // another error event
)
