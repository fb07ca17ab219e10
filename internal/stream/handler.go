package stream

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

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

// Serve answers the route: it refuses what it cannot serve now, takes the
// client's slots, places the stream (after its cursor, or live from the
// log's head) and hands the connection over to it.
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
	if err := h.startSlot(c); err != nil {
		return err
	}
	defer func() { <-h.hub.catchUp }()
	pos, fail, err := h.startPosition(c, r.after, pos)
	if err != nil {
		return err
	}
	head, chunked := streamHead(c)
	s := &stream{h: h, tcp: httpapi.TCPConn(c.Context().Conn()), filter: r.filter, pos: pos, chunked: chunked}
	ok = true
	h.hijack(c, key, s, head, fail)
	return nil
}

// startPosition is the log position a stream starts after: its cursor's,
// or with none the log's head, which the hub may not have read yet (pos,
// its position, when PostgreSQL does not answer). A cursor the log no
// longer holds, or never held, makes fail the error event the stream is
// answered instead.
func (h *Handler) startPosition(c *fiber.Ctx, after *store.Cursor, pos uint64) (start uint64, fail []byte, err error) {
	if after == nil {
		if head, err := h.hub.st.StreamHead(c.UserContext()); err == nil {
			pos = max(pos, head)
		}
		return pos, nil, nil
	}
	seq, found, known, err := h.hub.st.StreamPosition(c.UserContext(), *after)
	switch {
	case err != nil:
		c.Set(fiber.HeaderRetryAfter, "2")
		return 0, nil, httpapi.LoadError(err)
	case found:
		return seq, nil, nil
	case known:
		return pos, errorFrame(CodeCursorTooOld, "the stream no longer holds the changes after this cursor (it keeps "+
			h.cfg.Retention.String()+"): page GET /attestations with it, then open the stream without one"), nil
	default:
		return pos, errorFrame(CodeCursorUnknown, "no attestation indexed here has this cursor: open the stream without one"), nil
	}
}

// streamHead sets the stream's response headers and returns them as
// written; chunked says the body is sent in chunks (HTTP/1.1).
func streamHead(c *fiber.Ctx) (head []byte, chunked bool) {
	hdr := &c.Response().Header
	hdr.SetContentType("text/event-stream")
	chunked = c.Request().Header.IsHTTP11()
	if chunked {
		hdr.SetContentLength(-1)
	} else {
		hdr.SetContentLength(-2) // HTTP/1.0 knows no chunks: the body ends when the connection closes
		hdr.Del(fiber.HeaderTransferEncoding)
	}
	hdr.SetConnectionClose()
	return append([]byte(nil), hdr.Header()...), chunked
}

// hijack hands the connection over to s once Serve returns: s writes head
// (the response head), then fail (an error event instead of the stream)
// or the stream, and gives the client's slots (key) back when it ends.
func (h *Handler) hijack(c *fiber.Ctx, key netip.Prefix, s *stream, head, fail []byte) {
	h.streams.Add(1)
	h.m.open.Inc()
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(conn net.Conn) {
		defer h.streams.Done()
		defer h.m.open.Dec()
		defer h.release(key)
		s.conn = conn
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
}

// Buffered is how many bytes the node's streams hold for their clients.
func (h *Handler) Buffered() int64 { return h.budget.Held() }

// Open is the number of open streams.
func (h *Handler) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}
