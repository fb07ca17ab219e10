package devnet

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gorilla/websocket"
)

func contextBackground() context.Context { return context.Background() }

type noteKind int

const (
	noteTx    noteKind = iota // a transaction landed (confirmed)
	noteFinal                 // a transaction's slot was finalized
	noteSlot                  // a new slot
)

type note struct {
	kind noteKind
	rec  *txRecord
	slot uint64
	root uint64
}

// pubsub is the websocket side: subscriptions per connection, and a
// single dispatcher that delivers notifications in ledger order.
type pubsub struct {
	c      *Chain
	refuse atomic.Bool

	qmu   sync.Mutex
	queue []note
	wake  chan struct{}

	mu     sync.Mutex
	conns  map[*wsConn]struct{}
	nextID uint64
}

type subscription struct {
	id         uint64
	method     string // logsSubscribe, signatureSubscribe, slotSubscribe
	commitment string
	mentions   *solana.PublicKey // logs: nil means all
	signature  solana.Signature
}

type wsConn struct {
	ps     *pubsub
	conn   *websocket.Conn
	out    chan []byte
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	subs   map[uint64]*subscription
	closed atomic.Bool
}

func newPubsub(c *Chain) *pubsub {
	return &pubsub{c: c, wake: make(chan struct{}, 1), conns: map[*wsConn]struct{}{}}
}

// enqueue adds a notification; the caller holds the chain lock, so the
// queue is in ledger order.
func (ps *pubsub) enqueue(n note) {
	ps.qmu.Lock()
	ps.queue = append(ps.queue, n)
	ps.qmu.Unlock()
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

func (ps *pubsub) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ps.wake:
		}
		ps.qmu.Lock()
		q := ps.queue
		ps.queue = nil
		ps.qmu.Unlock()
		for _, n := range q {
			ps.deliver(n)
		}
	}
}

var upgrader = websocket.Upgrader{
	ReadBufferSize: 4096, WriteBufferSize: 64 << 10,
	CheckOrigin: func(*http.Request) bool { return true },
}

func (ps *pubsub) serveWS(w http.ResponseWriter, r *http.Request) {
	if ps.refuse.Load() {
		http.Error(w, "websocket unavailable", http.StatusServiceUnavailable)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	wc := &wsConn{ps: ps, conn: conn, out: make(chan []byte, 100_000), done: make(chan struct{}), subs: map[uint64]*subscription{}}
	ps.mu.Lock()
	ps.conns[wc] = struct{}{}
	ps.mu.Unlock()
	go wc.writeLoop()
	wc.readLoop()
}

// closeAll drops every connection and returns how many there were.
func (ps *pubsub) closeAll() int {
	ps.mu.Lock()
	conns := make([]*wsConn, 0, len(ps.conns))
	for wc := range ps.conns {
		conns = append(conns, wc)
	}
	ps.mu.Unlock()
	for _, wc := range conns {
		wc.close()
	}
	return len(conns)
}

func (wc *wsConn) close() {
	wc.once.Do(func() {
		wc.closed.Store(true)
		close(wc.done)
		_ = wc.conn.Close()
		wc.ps.mu.Lock()
		delete(wc.ps.conns, wc)
		wc.ps.mu.Unlock()
	})
}

func (wc *wsConn) writeLoop() {
	defer wc.close()
	for {
		select {
		case <-wc.done:
			return
		case msg := <-wc.out:
			_ = wc.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := wc.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		}
	}
}

// send queues a message; a client that does not keep up is disconnected,
// as a real node does.
func (wc *wsConn) send(v any) {
	if wc.closed.Load() {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	select {
	case wc.out <- b:
	default:
		wc.close()
	}
}

func (wc *wsConn) readLoop() {
	defer wc.close()
	for {
		_, msg, err := wc.conn.ReadMessage()
		if err != nil {
			return
		}
		var req rpcRequest
		if err := json.Unmarshal(msg, &req); err != nil {
			wc.send(rpcResponse{Error: &rpcError{Code: codeParse, Message: "Parse error"}})
			continue
		}
		res, rerr := wc.handle(req)
		if rerr != nil {
			wc.send(rpcResponse{ID: req.ID, Error: rerr})
			continue
		}
		wc.send(rpcResponse{ID: req.ID, Result: res})
	}
}

// handle answers one JSON-RPC request on the websocket.
func (wc *wsConn) handle(req rpcRequest) (any, *rpcError) {
	switch req.Method {
	case "logsSubscribe":
		return wc.logsSubscribe(req)
	case "signatureSubscribe":
		return wc.signatureSubscribe(req)
	case "slotSubscribe":
		return wc.subscribe(&subscription{method: req.Method}), nil
	case "logsUnsubscribe", "signatureUnsubscribe", "slotUnsubscribe":
		return wc.unsubscribe(req)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "Method not found"}
}

// subscribe gives s the next subscription id and adds it to the
// connection's subscriptions.
func (wc *wsConn) subscribe(s *subscription) uint64 {
	ps := wc.ps
	ps.mu.Lock()
	ps.nextID++
	s.id = ps.nextID
	ps.mu.Unlock()
	wc.mu.Lock()
	wc.subs[s.id] = s
	wc.mu.Unlock()
	return s.id
}

// logsSubscribe subscribes to the logs of every transaction ("all",
// "allWithVotes") or of those mentioning one address.
func (wc *wsConn) logsSubscribe(req rpcRequest) (any, *rpcError) {
	if len(req.Params) == 0 {
		return nil, invalidParams("missing filter")
	}
	s := &subscription{method: req.Method}
	var name string
	if json.Unmarshal(req.Params[0], &name) == nil {
		if name != "all" && name != "allWithVotes" {
			return nil, invalidParams("unknown filter %q", name)
		}
	} else {
		var f struct {
			Mentions []string `json:"mentions"`
		}
		if err := json.Unmarshal(req.Params[0], &f); err != nil || len(f.Mentions) != 1 {
			return nil, invalidParams("Invalid Request: Only 1 address supported")
		}
		pk, err := solana.PublicKeyFromBase58(f.Mentions[0])
		if err != nil {
			return nil, invalidParams("Invalid pubkey provided")
		}
		s.mentions = &pk
	}
	cfg, rerr := parseConfig(req.Params, 1)
	if rerr != nil {
		return nil, rerr
	}
	s.commitment = cfg.Commitment
	return wc.subscribe(s), nil
}

// signatureSubscribe subscribes to one transaction reaching a commitment,
// notifying at once when it has.
func (wc *wsConn) signatureSubscribe(req rpcRequest) (any, *rpcError) {
	ps := wc.ps
	str, rerr := paramString(req.Params, 0, "signature")
	if rerr != nil {
		return nil, rerr
	}
	sig, rerr := parseSignature(str)
	if rerr != nil {
		return nil, rerr
	}
	cfg, rerr := parseConfig(req.Params, 1)
	if rerr != nil {
		return nil, rerr
	}
	s := &subscription{method: req.Method, signature: sig, commitment: cfg.Commitment}
	id := wc.subscribe(s)
	// Already at the commitment: notify right away.
	ps.c.mu.RLock()
	r, ok := ps.c.txs[sig]
	reached := ok && (!finalCommitment(s.commitment) || r.slot <= ps.c.finalizedSlotLocked())
	slot := ps.c.slot
	ps.c.mu.RUnlock()
	if reached {
		go func() {
			time.Sleep(time.Millisecond) // after the subscription id reaches the client
			wc.notifySignature(s, r, slot)
		}()
	}
	return id, nil
}

// unsubscribe ends one of the connection's subscriptions.
func (wc *wsConn) unsubscribe(req rpcRequest) (any, *rpcError) {
	var id uint64
	if len(req.Params) == 0 || json.Unmarshal(req.Params[0], &id) != nil {
		return nil, invalidParams("subscription id")
	}
	wc.mu.Lock()
	_, ok := wc.subs[id]
	delete(wc.subs, id)
	wc.mu.Unlock()
	if !ok {
		return nil, &rpcError{Code: codeInvalidParams, Message: "Invalid subscription id."}
	}
	return true, nil
}

func finalCommitment(c string) bool {
	return c == "" || c == "finalized" || c == "max" || c == "root"
}

func notification(method string, sub uint64, result any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "method": method, "params": map[string]any{"result": result, "subscription": sub}}
}

func (wc *wsConn) notifySignature(s *subscription, r *txRecord, slot uint64) {
	wc.mu.Lock()
	_, live := wc.subs[s.id]
	delete(wc.subs, s.id) // signature subscriptions end after one notification
	wc.mu.Unlock()
	if !live {
		return
	}
	wc.send(notification("signatureNotification", s.id, map[string]any{
		"context": map[string]any{"slot": slot}, "value": map[string]any{"err": r.meta.Err}}))
}

// deliver sends one ledger notification to every matching subscription.
func (ps *pubsub) deliver(n note) {
	ps.mu.Lock()
	conns := make([]*wsConn, 0, len(ps.conns))
	for wc := range ps.conns {
		conns = append(conns, wc)
	}
	ps.mu.Unlock()
	times := 1
	if ps.c.duplicate.Load() && n.kind != noteSlot {
		times = 2
	}
	for _, wc := range conns {
		wc.mu.Lock()
		subs := make([]*subscription, 0, len(wc.subs))
		for _, s := range wc.subs {
			subs = append(subs, s)
		}
		wc.mu.Unlock()
		for _, s := range subs {
			switch {
			case n.kind == noteSlot && s.method == "slotSubscribe":
				parent := n.slot - 1
				wc.send(notification("slotNotification", s.id, map[string]any{"parent": parent, "root": n.root, "slot": n.slot}))
			case n.kind != noteSlot && s.method == "logsSubscribe":
				if (n.kind == noteFinal) != finalCommitment(s.commitment) || n.rec.dropped {
					continue
				}
				if s.mentions != nil && !mentions(n.rec, *s.mentions) {
					continue
				}
				logs := n.rec.meta.Logs
				if logs == nil {
					logs = []string{}
				}
				for i := 0; i < times; i++ {
					wc.send(notification("logsNotification", s.id, map[string]any{
						"context": map[string]any{"slot": n.rec.slot},
						"value":   map[string]any{"signature": n.rec.sig.String(), "err": n.rec.meta.Err, "logs": logs},
					}))
				}
			case n.kind != noteSlot && s.method == "signatureSubscribe":
				if s.signature != n.rec.sig || (n.kind == noteFinal) != finalCommitment(s.commitment) || n.rec.dropped {
					continue
				}
				wc.notifySignature(s, n.rec, n.slot)
			}
		}
	}
}

func mentions(r *txRecord, k solana.PublicKey) bool {
	for _, kk := range r.keys {
		if kk == k {
			return true
		}
	}
	return false
}
