package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// behindTheRing adds an attestation, then more than the hub's ring holds
// after it: a stream resumed from the first reads PostgreSQL (a catch-up)
// for everything the ring no longer holds. It returns the first one's
// cursor and the ids of those added after it, in the log's order.
func (x *harness) behindTheRing() (string, []string) {
	x.t.Helper()
	first := x.add(1, 0, attestation.Confirmed)[0]
	var ids []string
	for len(ids) < ringSize+2000 {
		for _, a := range sortLikeLog(x.add(500, len(ids)/500, attestation.Confirmed)) {
			ids = append(ids, cursorOf(a))
		}
	}
	testenv.WaitForState(x.t, "the hub read every row", testenv.Patience, func() (bool, string) {
		x.hub.mu.RLock()
		defer x.hub.mu.RUnlock()
		return len(x.hub.ring) == ringSize, fmt.Sprintf("%d rows in the ring of %d", len(x.hub.ring), ringSize)
	})
	return cursorOf(first), ids
}

// neverReading opens a stream from cursor on a connection whose client
// never reads (a 4 KiB receive buffer: the node's writes soon block).
func (x *harness) neverReading(cursor string) net.Conn {
	x.t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(x.node.Root, "http://"))
	testenv.Must(x.t, err, "dial")
	x.t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: x\r\nLast-Event-ID: %s\r\n\r\n", cursor)
	testenv.Must(x.t, err, "send")
	return c
}

// blocked counts the streams that hold part of the node's budget, and
// those of them whose write has been blocked on their client for longer
// than d.
func (x *harness) blocked(d time.Duration) (blocked, holding int) {
	limit := time.Now().Add(-d).UnixNano()
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	for s := range x.h.live {
		if s.holds.Load() == 0 {
			continue
		}
		holding++
		if w := s.writing.Load(); w != 0 && w < limit {
			blocked++
		}
	}
	return blocked, holding
}

// waitBlocked waits until every stream holding part of the budget has had
// its write blocked on its client for longer than d: the event the budget
// tests wait for before they measure or ask for room (how long it takes
// depends on the machine's load, so no fixed pause stands for it).
func (x *harness) waitBlocked(what string, d time.Duration) {
	x.t.Helper()
	testenv.WaitForState(x.t, what, testenv.Patience, func() (bool, string) {
		b, h := x.blocked(d)
		return h > 0 && b == h, fmt.Sprintf("%d of the %d streams holding budget blocked for over %s", b, h, d)
	})
}

// liveHeap is the heap's live bytes after two collections (the second
// empties what sync.Pool kept from the first).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestNeverReadingCatchUpStaysWithinBudget: streams resumed from an old
// cursor whose clients never read held each the rows of a whole catch-up
// read (500 rows, about 0.44 MiB) until the write timeout dropped them,
// and slow readers for their whole life: here, 31 such streams grew the
// live heap by 15 MiB. The rows a stream holds now come out of the node's
// byte budget: the bytes held stay within half of it (the collector's
// headroom is the other half), and so does the live heap they grow, while
// the node keeps streaming to a client that reads.
func TestNeverReadingCatchUpStaysWithinBudget(t *testing.T) {
	const perStream, total = 64 << 10, 1 << 20
	x := newHarness(t, Config{WriteTimeout: time.Minute, BufferPerStream: perStream, BufferTotal: total})
	cursor, _ := x.behindTheRing()
	before := liveHeap()
	const streams = 31 // the per-IP cap (32), less the reading client's
	for range streams {
		x.neverReading(cursor)
	}
	testenv.WaitForState(t, "streams answered", testenv.Patience, func() (bool, string) {
		open, shed := x.h.Open(), int(testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget")))
		return open+shed >= streams, fmt.Sprintf("%d open, %d ended for the budget", open, shed)
	})
	// Every stream has filled its socket and blocked, or was ended: what
	// they hold is at its most from here on.
	x.waitBlocked("every stream holding budget blocked on its client", 0)
	var most int64
	for range 60 { // 3 s of samples of what they hold
		most = max(most, x.h.Buffered())
		time.Sleep(50 * time.Millisecond)
	}
	grew := liveHeap() - before
	shed := testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget"))
	t.Logf("%d never-reading catch-up streams: at most %d KiB held (budget %d KiB, half of it held at most), live heap +%d KiB, %.0f ended for the budget, %d open",
		streams, most>>10, total>>10, grew>>10, shed, x.h.Open())
	if most > total/2 {
		t.Errorf("the streams held %d bytes, over half the node's budget of %d", most, total)
	}
	if most == 0 {
		t.Errorf("the streams held nothing: they never caught up")
	}
	// Each stream's own state (connections, goroutines' heap, the
	// request) besides what the budget counts: 16 KiB each is generous.
	if limit := int64(total + streams*16<<10); grew > limit {
		t.Errorf("the live heap grew by %d KiB with %d never-reading streams, over the budget and their state (%d KiB)", grew>>10, streams, limit>>10)
	}
	// A client that reads is still served, live.
	r, resp := x.open("", nil)
	if r == nil {
		t.Fatalf("a live stream beside them: %d", resp.StatusCode)
	}
	added := x.add(1, 0, attestation.Confirmed)
	if e := r.mustNext(t); e.ID != cursorOf(added[0]) {
		t.Fatalf("a live stream beside them: %+v", e)
	}
}

// fillBudget opens never-reading catch-up streams from cursor until the
// share of the node's budget catch-ups may take is full (the rest is left
// for write buffers), and returns their connections.
func (x *harness) fillBudget(cursor string, streams int) []net.Conn {
	x.t.Helper()
	var cs []net.Conn
	for range streams {
		cs = append(cs, x.neverReading(cursor))
	}
	// Full, and settled: every stream left has blocked on its client (the
	// others were ended for the budget).
	full := x.h.budget.max*3/4 - minCatchUp
	var held int64
	var open, same int
	testenv.WaitForState(x.t, "the catch-up share of the budget full and settled", testenv.Patience, func() (bool, string) {
		time.Sleep(50 * time.Millisecond)
		if b, o := x.h.Buffered(), x.h.Open(); b != held || o != open {
			held, open, same = b, o, 0
		} else {
			same++
		}
		blocked, holding := x.blocked(0)
		return held > full && same >= 10 && blocked == holding,
			fmt.Sprintf("%d bytes held (full past %d) by %d streams of which %d blocked on their client, %d open, unchanged for %d checks", held, full, holding, blocked, open, same)
	})
	return cs
}

// TestBufferFullIsAResumableErrorEvent: a stream that would pass the
// node's budget ends with an error event STREAM_BUFFER_FULL (not a cursor
// error: the client resumes with its last id), counted as ended for the
// budget, while live streams keep their quarter of the budget and are
// served. The Go client resumes from it, and gets every attestation once
// when room comes back. (The streams holding the budget are never ended to
// make room here: see TestBlockedStreamsEndedForReaders.)
func TestBufferFullIsAResumableErrorEvent(t *testing.T) {
	x := newHarness(t, Config{WriteTimeout: time.Minute, BufferPerStream: 64 << 10, BufferTotal: 1 << 20})
	x.h.evictAfter.Store(int64(time.Hour))
	cursor, ids := x.behindTheRing()
	hogs := x.fillBudget(cursor, 24)

	r, resp := x.open("", http.Header{"Last-Event-ID": {cursor}})
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	e := r.mustNext(t)
	var env struct {
		Error struct{ Code, Message string }
	}
	if e.Event != "error" || e.ID != "" || json.Unmarshal([]byte(e.Data), &env) != nil || env.Error.Code != CodeBufferFull ||
		!strings.Contains(env.Error.Message, "Last-Event-ID") {
		t.Fatalf("a catch-up with the budget full: %+v, want an error event %s", e, CodeBufferFull)
	}
	if _, err := r.nextEvent(); err != io.EOF {
		t.Fatalf("after the error event: %v, want the end", err)
	}
	// Counted as the handler returns, which may be just after the client
	// read the end.
	testenv.WaitForState(t, "the stream counted as ended for the budget", testenv.Patience, func() (bool, string) {
		got := testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget"))
		return got >= 1, fmt.Sprintf("ended for the budget: %.0f", got)
	})
	live, resp := x.open("", nil)
	if live == nil {
		t.Fatalf("live: status %d", resp.StatusCode)
	}
	added := x.add(1, 0, attestation.Confirmed)
	if e := live.mustNext(t); e.ID != cursorOf(added[0]) {
		t.Fatalf("a live stream with the catch-up share full: %+v", e)
	}

	// The Go client: shed while the budget is full, then resumed.
	cl, err := client.New(x.node.Root)
	testenv.Must(t, err, "client")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 2*len(ids)+2)
	done := make(chan error, 1)
	shedBefore := testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget"))
	go func() {
		done <- cl.Stream(ctx, client.StreamParams{After: cursor}, func(e client.StreamEvent) error {
			if e.Type == client.StreamAttestation {
				got <- e.ID
			}
			return nil
		})
	}()
	testenv.WaitFor(t, "the client shed", testenv.Patience, func() bool { return testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget")) > shedBefore })
	for _, c := range hogs { // the never-reading clients go: room comes back
		c.Close()
	}
	want := append(ids, cursorOf(added[0]))
	seen := make([]string, 0, len(want))
	for len(seen) < len(want) {
		select {
		case id := <-got:
			seen = append(seen, id)
		case err := <-done:
			t.Fatalf("Stream returned %v after %d events", err, len(seen))
		case <-time.After(testenv.Patience):
			t.Fatalf("got %d of %d events", len(seen), len(want))
		}
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("event %d: %s, want %s (every attestation after the cursor once, in order)", i, seen[i], want[i])
		}
	}
}

// TestSlowReadersHoldTheirBudget: clients catching up while they read
// slowly (about 40 KB/s, each write taken well within the write timeout)
// were never dropped, and held a whole catch-up read (0.44 MiB) for their
// whole life. Each now holds at most its own budget; none is dropped or
// ended, and each gets its events in order.
func TestSlowReadersHoldTheirBudget(t *testing.T) {
	const perStream, readers = 64 << 10, 4
	x := newHarness(t, Config{BufferPerStream: perStream})
	cursor, ids := x.behindTheRing()
	errs := make(chan error, readers)
	stop := make(chan struct{})
	for range readers {
		r, resp := x.open("", http.Header{"Last-Event-ID": {cursor}})
		if r == nil {
			t.Fatalf("status %d", resp.StatusCode)
		}
		go func() { // 4 KiB every 100 ms, checking the order of what it reads
			for n := 0; ; n++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				e, err := r.nextEvent()
				if err != nil {
					errs <- err
					return
				}
				if n >= len(ids) || e.Event != "attestation" || e.ID != ids[n] {
					errs <- fmt.Errorf("event %d: %+v, not the next attestation", n, e)
					return
				}
				if n%4 == 3 {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	var most int64
	for range 60 {
		most = max(most, x.h.Buffered())
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	for range readers {
		if err := <-errs; err != nil {
			t.Fatalf("a slow reader: %v", err)
		}
	}
	t.Logf("%d slow readers held at most %d KiB together", readers, most>>10)
	if most > readers*perStream {
		t.Errorf("%d slow readers held %d KiB, over their budgets (%d KiB)", readers, most>>10, readers*perStream>>10)
	}
	for _, why := range []string{"slow", "budget", "error"} {
		if n := testutil.ToFloat64(x.h.m.ended.WithLabelValues(why)); n != 0 {
			t.Errorf("%.0f streams ended %s", n, why)
		}
	}
}

// TestBlockedStreamsEndedForReaders: with the budget held by streams whose
// clients do not read (their writes blocked for longer than evictAfter), a
// client that reads is not refused: the blocked streams are ended to make
// room (counted as ended for the budget), and it catches up, in order.
func TestBlockedStreamsEndedForReaders(t *testing.T) {
	x := newHarness(t, Config{WriteTimeout: time.Minute, BufferPerStream: 64 << 10, BufferTotal: 1 << 20})
	x.h.evictAfter.Store(int64(300 * time.Millisecond))
	cursor, ids := x.behindTheRing()
	x.fillBudget(cursor, 24)
	before := testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget"))
	x.waitBlocked("every write of theirs blocked past evictAfter", 300*time.Millisecond)
	r, resp := x.open("", http.Header{"Last-Event-ID": {cursor}})
	if r == nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for i := range 200 {
		if e := r.mustNext(t); e.Event != "attestation" || e.ID != ids[i] {
			t.Fatalf("event %d: %+v, want the attestation %s", i, e, ids[i])
		}
		if b := x.h.Buffered(); b > x.h.budget.max {
			t.Fatalf("held %d, over %d", b, x.h.budget.max)
		}
	}
	if after := testutil.ToFloat64(x.h.m.ended.WithLabelValues("budget")); after <= before {
		t.Fatalf("no blocked stream was ended to make room (%.0f, then %.0f)", before, after)
	}
}
