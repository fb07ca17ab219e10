package stream

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/pubsub"
	"github.com/attestd/attestd/internal/store"
	"github.com/redis/go-redis/v9"
)

// ringSize is how many of the newest log rows a hub keeps in memory (a
// few MiB): clients within it read memory, clients behind it PostgreSQL.
const ringSize = 8192

// readBatch is how many log rows one read takes.
const readBatch = 1000

// Event is one log row as streams send it: its frame is made once, for
// every client.
type Event struct {
	Seq        uint64
	Kind       store.StreamKind
	AgentPDA   string
	ActionType attestation.ActionType
	// ActionHash and TxSignature: the lookup filters' fields.
	ActionHash  []byte
	TxSignature string
	Frame       []byte // "event: ...\n[id: ...\n]data: ...\n\n"
}

// matches reports whether the event passes f.
func (e *Event) matches(f store.StreamFilter) bool {
	return (f.AgentPDA == "" || e.AgentPDA == f.AgentPDA) && (f.ActionType == nil || *f.ActionType == e.ActionType) &&
		(f.ActionHash == nil || bytes.Equal(e.ActionHash, f.ActionHash)) && (f.TxSignature == "" || e.TxSignature == f.TxSignature)
}

var kindNames = [...]string{store.StreamAttestation: "attestation", store.StreamCommitment: "commitment", store.StreamRemoved: "removed"}

// newEvent makes the frame of a log row. Only attestation events carry an
// id (the row's list cursor): a client's last id stays the last
// attestation it saw.
func newEvent(r *store.StreamEvent) *Event {
	e := &Event{Seq: r.Seq, Kind: r.Kind, AgentPDA: r.AgentPDA, ActionType: r.ActionType, ActionHash: r.ActionHash, TxSignature: r.TxSignature}
	name := "message"
	if int(r.Kind) < len(kindNames) {
		name = kindNames[r.Kind]
	}
	b := make([]byte, 0, len(r.Data)+120)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, '\n')
	if r.Kind == store.StreamAttestation {
		c := r.Cursor()
		b = append(b, "id: "...)
		b = append(b, httpapi.EncodeCursor(&c)...)
		b = append(b, '\n')
	}
	b = appendData(b, r.Data)
	e.Frame = b
	return e
}

// appendData appends data as "data:" lines (one per line of data: JSON
// from the log has none, but a line break must never end the event) and
// the blank line that ends the event.
func appendData(b, data []byte) []byte {
	for {
		b = append(b, "data: "...)
		i := indexLineBreak(data)
		if i < 0 {
			b = append(b, data...)
			return append(b, '\n', '\n')
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}

func indexLineBreak(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

// Hub is a node's view of the stream log: the newest rows in a ring, kept
// current by one subscription. Streams wait on it.
type Hub struct {
	st  *store.Store
	log *slog.Logger
	cfg Config

	mu      sync.RWMutex
	ring    []*Event // the newest rows, oldest first (at most ringSize)
	last    uint64   // the newest row read (the ring's last, or the head at start)
	from    uint64   // the ring holds every row after this one (up to last)
	ready   bool     // last is known
	changed chan struct{}

	wake     chan struct{}
	closing  chan struct{} // closed when streams must end (drain)
	closeOne sync.Once
	stop     context.CancelFunc
	wg       sync.WaitGroup
	listener *pubsub.Listener

	catchUp chan struct{} // bounds concurrent catch-up reads of PostgreSQL
}

// HubDeps configure a Hub.
type HubDeps struct {
	Store  *store.Store
	Redis  redis.UniversalClient // nil: no subscription, the poll only
	Prefix string                // ATTESTD_REDIS_PREFIX: the hub listens on its "epoch" channel
	Config                       // the tunables, from settings
	Logger *slog.Logger
}

// NewHub starts a hub: it subscribes to the index epoch channel (the
// indexer announces every commit there) and reads the log on every
// announcement, every resubscription and every Config.Poll.
func NewHub(o HubDeps) *Hub {
	h := &Hub{st: o.Store, log: o.Logger, cfg: o.Config.withDefaults(), changed: make(chan struct{}),
		wake: make(chan struct{}, 1), closing: make(chan struct{}), catchUp: make(chan struct{}, 8)}
	if h.log == nil {
		h.log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	if o.Redis != nil {
		h.listener = pubsub.Listen(o.Redis, o.Prefix+"epoch", pubsub.Handlers{
			Resync:  func(context.Context) { h.Wake() },
			Message: func(string) { h.Wake() },
		})
	}
	h.wg.Add(2)
	go h.run(ctx)
	go h.prune(ctx)
	return h
}

// Wake makes the hub read the log now (it never blocks).
func (h *Hub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Drain ends every open stream now and refuses new ones (the node is
// stopping: clients reconnect to another node with their last id).
func (h *Hub) Drain() { h.closeOne.Do(func() { close(h.closing) }) }

// Draining reports whether Drain was called.
func (h *Hub) Draining() bool {
	select {
	case <-h.closing:
		return true
	default:
		return false
	}
}

// Close drains and stops the hub.
func (h *Hub) Close() {
	h.Drain()
	if h.listener != nil {
		h.listener.Close()
	}
	h.stop()
	h.wg.Wait()
}

func (h *Hub) run(ctx context.Context) {
	defer h.wg.Done()
	t := time.NewTicker(h.cfg.Poll)
	defer t.Stop()
	for {
		h.read(ctx)
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-t.C:
		}
	}
}

// read appends the rows after last to the ring and tells the streams.
func (h *Hub) read(ctx context.Context) {
	h.mu.RLock()
	ready, last := h.ready, h.last
	h.mu.RUnlock()
	if !ready {
		head, err := h.st.StreamHead(ctx)
		if err != nil {
			h.log.Warn("stream: reading the log head failed; retrying", "err", err)
			return
		}
		h.mu.Lock()
		h.ready, h.last, h.from = true, head, head
		h.mu.Unlock()
		return
	}
	for {
		rows, next, full, err := h.st.StreamEvents(ctx, last, 1<<62, store.StreamFilter{}, readBatch)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("stream: reading the log failed; retrying", "err", err)
			}
			return
		}
		if next == last {
			return
		}
		evs := make([]*Event, len(rows))
		for i := range rows {
			evs[i] = newEvent(&rows[i])
		}
		last = next
		h.mu.Lock()
		h.ring = append(h.ring, evs...)
		if n := len(h.ring); n > ringSize {
			// The ring no longer holds the dropped rows: it covers from
			// the last of them. Copy into a fresh slice so they can be freed.
			h.from = h.ring[n-ringSize-1].Seq
			h.ring = append(make([]*Event, 0, ringSize+readBatch), h.ring[n-ringSize:]...)
		}
		h.last = last
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
		if !full {
			return
		}
	}
}

// since returns the ring's rows after pos (at most max), the newest row
// read, whether the ring holds every row after pos (otherwise the caller
// reads PostgreSQL up to last), and a channel closed on the next change.
// Row numbers in the ring may skip (rows left out: attestations removed
// before the hub read them), so rows are found by number.
func (h *Hub) since(pos uint64, max int) (evs []*Event, last uint64, covered bool, changed <-chan struct{}) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	last, changed = h.last, h.changed
	if pos >= last {
		return nil, last, true, changed
	}
	if pos < h.from {
		return nil, last, false, changed
	}
	i := sort.Search(len(h.ring), func(i int) bool { return h.ring[i].Seq > pos })
	j := min(len(h.ring), i+max)
	return h.ring[i:j:j], last, true, changed
}

// position is the hub's newest row, or false before it knows it.
func (h *Hub) position() (uint64, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.last, h.ready
}

// prune deletes log rows older than the retention, in bounded batches,
// every few minutes (on every node: a delete of rows already gone is
// cheap).
func (h *Hub) prune(ctx context.Context) {
	defer h.wg.Done()
	for {
		t := time.NewTimer(4*time.Minute + rand.N(2*time.Minute))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		cutoff := time.Now().Add(-h.cfg.Retention)
		for range 100 {
			n, err := h.st.PruneStream(ctx, cutoff, 5000)
			if err != nil {
				if ctx.Err() == nil {
					h.log.Warn("stream: pruning the log failed", "err", err)
				}
				break
			}
			if n < 5000 {
				break
			}
		}
	}
}
