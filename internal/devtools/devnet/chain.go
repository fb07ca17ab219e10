package devnet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/prova"
	"github.com/gagliardetto/solana-go"
)

// Config configures a simulator. The zero value is usable: a free port, the
// default program id, 400 ms slots, finality 32 slots later.
type Config struct {
	// Addr is the JSON-RPC listen address; the websocket listens on the
	// next port. Empty or port 0: a free pair of ports on 127.0.0.1.
	Addr string
	// ProgramID is the Prova program's address (default
	// attestation.DefaultProgramID).
	ProgramID solana.PublicKey
	// SlotInterval is how often a slot passes (default 400 ms). Negative:
	// slots only advance through AdvanceSlots.
	SlotInterval time.Duration
	// FinalityDepth is how many slots after inclusion a transaction is
	// finalized (default 32).
	FinalityDepth uint64
	// Seed makes generated keys and payloads reproducible, and names the
	// chain: getGenesisHash derives from it (default 1; with StateDir, a
	// random seed the first time, then the saved one).
	Seed int64
	// StateDir, when set, is where the chain is kept (chain.json): a
	// simulator started again on the same directory continues the saved
	// chain (same genesis hash, the slot after the saved one, the same
	// agents and accounts) instead of starting over at slot 1, and does
	// not generate the initial traffic again. The chain is saved every
	// second and on Close; the transactions of finalized slots go to a
	// ledger file beside it, so a continued chain still knows every
	// transaction it landed.
	StateDir string
	// AfterSlot is the last slot the chain must not use: a new chain's
	// first slot is the next one, and a saved chain stopped below it
	// continues there (the slots between passed empty, as a leader's
	// skipped slots do). So data already stored at slots up to it (make
	// run's seeded demo data) and the chain's share one slot space.
	AfterSlot uint64
	// Agents, Attestations and Batch describe traffic generated at start:
	// Attestations attestations from Agents agents in transactions of up to
	// Batch entries (default 100, max 100).
	Agents, Attestations, Batch int
	// Rate keeps producing this many attestations per second after the
	// initial traffic (0: none).
	Rate float64
	// LogLimit truncates a transaction's logs past this many bytes with
	// "Log truncated", as the runtime does at 10,000 (0: no limit).
	LogLimit int
	// Logger receives the simulator's logs (default slog.Default()).
	Logger *slog.Logger
}

// Account is an account's state.
type Account struct {
	Lamports   uint64
	Owner      solana.PublicKey
	Data       []byte
	Executable bool
}

func (a *Account) clone() *Account {
	if a == nil {
		return nil
	}
	c := *a
	c.Data = append([]byte(nil), a.Data...)
	return &c
}

type block struct {
	slot      uint64
	time      int64
	blockhash solana.Hash
	txs       []*txRecord
}

// txRecord is one transaction that landed, failed or not.
type txRecord struct {
	seq       uint64
	sig       solana.Signature
	slot      uint64
	blockTime int64
	raw       []byte
	tx        *solana.Transaction
	versioned bool
	keys      []solana.PublicKey
	meta      txMeta
	events    []prova.LoggedEvent // events our program emitted (ground truth)
	undo      []func(st map[solana.PublicKey]*Account)
	dropped   bool
}

// Chain is a running simulator.
type Chain struct {
	cfg Config
	log *slog.Logger
	// down: the endpoints act as a provider that is away (Unreachable).
	down atomic.Bool

	mu          sync.RWMutex
	slot        uint64
	blocks      map[uint64]*block
	blockhashes map[solana.Hash]uint64
	txs         map[solana.Signature]*txRecord
	byAddr      map[solana.PublicKey][]*txRecord
	accounts    map[solana.PublicKey]*Account
	seq         uint64
	genesis     time.Time

	genMu  sync.Mutex // serialises traffic generation and the key generator
	rng    *rand.Rand
	faucet solana.PrivateKey
	agents []*Agent
	mints  map[solana.PublicKey]*mintInfo

	// Saving (StateDir): every transaction of a slot up to archived is in
	// the ledger file, whose first ledgerSize bytes hold them; under saveMu.
	saveMu     sync.Mutex
	archived   uint64
	ledgerSize int64

	ps        *pubsub
	duplicate atomic.Bool

	// Transactions getTransaction answers null for (a lagging node behind
	// a load balancer), and the rule for the next ones to land; under mu.
	hidden       map[solana.Signature]*hideState
	hideNext     int
	hideNextRule Hide

	// Transactions accepted but not landed yet (HoldNextTransactions).
	holdNext int
	held     []heldTx

	rpcLn, wsLn   net.Listener
	rpcSrv, wsSrv *http.Server
	cancel        context.CancelFunc
	wg            sync.WaitGroup
	closeOnce     sync.Once
}

// Start builds the genesis state, binds the listeners, starts the slot
// clock and generates the configured initial traffic (synchronously), then
// starts the rate loop when Config.Rate is set. Close stops everything.
func Start(ctx context.Context, cfg Config) (*Chain, error) {
	saved, resumed, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	c := newChain(cfg)
	if resumed {
		if err := c.restore(saved); err != nil {
			return nil, err
		}
	} else {
		c.genesisState()
	}
	if err := c.trimLedger(); err != nil {
		return nil, err
	}
	if err := c.listen(cfg.Addr); err != nil {
		return nil, err
	}
	if err := c.run(ctx, saved, resumed); err != nil {
		return nil, err
	}
	c.log.Info("devnet listening", "rpc", c.RPCURL(), "ws", c.WSURL(), "program", cfg.ProgramID.String(),
		"slotInterval", cfg.SlotInterval.String(), "finalityDepth", cfg.FinalityDepth)
	return c, nil
}

// complete fills in cfg's defaults and, with a StateDir, loads the saved
// chain there: resumed says there was one, whose seed cfg takes.
func (cfg *Config) complete() (saved savedState, resumed bool, err error) {
	if cfg.ProgramID.IsZero() {
		cfg.ProgramID = solana.MustPublicKeyFromBase58(attestation.DefaultProgramID)
	}
	if cfg.SlotInterval == 0 {
		cfg.SlotInterval = 400 * time.Millisecond
	}
	if cfg.FinalityDepth == 0 {
		cfg.FinalityDepth = 32
	}
	if cfg.StateDir != "" {
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return savedState{}, false, fmt.Errorf("devnet: state directory: %w", err)
		}
		if saved, resumed, err = loadState(cfg.StateDir); err != nil {
			return savedState{}, false, err
		}
		switch {
		case resumed:
			cfg.Seed = saved.Seed
		case cfg.Seed == 0:
			cfg.Seed = newSeed()
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Batch <= 0 || cfg.Batch > prova.MaxAttestationsPerTx {
		cfg.Batch = prova.MaxAttestationsPerTx
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return saved, resumed, nil
}

// newChain is an empty chain for cfg (completed), not yet started.
func newChain(cfg Config) *Chain {
	c := &Chain{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "devnet"),
		blocks:      map[uint64]*block{},
		blockhashes: map[solana.Hash]uint64{},
		txs:         map[solana.Signature]*txRecord{},
		byAddr:      map[solana.PublicKey][]*txRecord{},
		hidden:      map[solana.Signature]*hideState{},
		accounts:    map[solana.PublicKey]*Account{},
		mints:       map[solana.PublicKey]*mintInfo{},
		rng:         rand.New(rand.NewSource(cfg.Seed)),
		genesis:     time.Now(),
	}
	c.ps = newPubsub(c)
	return c
}

// run serves the bound listeners and starts the background loops (the
// subscriptions, the slot clock, saving, the rate), generating the initial
// traffic of a new chain first; on an error it closes the chain.
func (c *Chain) run(ctx context.Context, saved savedState, resumed bool) error {
	cfg := c.cfg
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.serve()
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.ps.dispatch(runCtx) }()
	if cfg.SlotInterval > 0 {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.clock(runCtx) }()
	}
	if !resumed && (cfg.Attestations > 0 || cfg.Agents > 0) {
		agents := max(cfg.Agents, 1)
		if _, err := c.Generate(ctx, agents, cfg.Attestations, cfg.Batch); err != nil {
			c.Close()
			return fmt.Errorf("devnet: initial traffic: %w", err)
		}
	}
	if cfg.StateDir != "" {
		if err := c.save(); err != nil {
			c.Close()
			return err
		}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.saveLoop(runCtx) }()
		if resumed {
			c.log.Info("devnet continues its saved chain", "dir", cfg.StateDir, "slot", c.Slot(), "agents", len(saved.Agents))
		}
	}
	if cfg.Rate > 0 {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.rateLoop(runCtx, cfg.Rate) }()
	}
	return nil
}

// listen binds the RPC port and the websocket on the next port.
func (c *Chain) listen(addr string) error {
	host, port := "127.0.0.1", 0
	if addr != "" {
		h, p, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("devnet: listen address %q: %w", addr, err)
		}
		if h != "" {
			host = h
		}
		if port, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("devnet: listen port %q: %w", p, err)
		}
	}
	for attempt := 0; attempt < 50; attempt++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("devnet: listen rpc: %w", err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ws, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+1)))
		if err == nil {
			c.rpcLn, c.wsLn = ln, ws
			return nil
		}
		ln.Close()
		if port != 0 {
			return fmt.Errorf("devnet: listen websocket on port %d: %w", p+1, err)
		}
	}
	return errors.New("devnet: no free pair of adjacent ports")
}

func (c *Chain) serve() {
	c.rpcSrv = &http.Server{Handler: http.HandlerFunc(c.serveRPC), ReadHeaderTimeout: 10 * time.Second}
	c.wsSrv = &http.Server{Handler: http.HandlerFunc(c.ps.serveWS), ReadHeaderTimeout: 10 * time.Second}
	for _, s := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{c.rpcSrv, c.rpcLn}, {c.wsSrv, c.wsLn}} {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.log.Error("devnet server stopped", "addr", s.ln.Addr().String(), "err", err)
			}
		}()
	}
}

// RPCURL is the JSON-RPC endpoint, e.g. http://127.0.0.1:8899.
func (c *Chain) RPCURL() string { return "http://" + c.rpcLn.Addr().String() }

// WSURL is the PubSub websocket endpoint, e.g. ws://127.0.0.1:8900.
func (c *Chain) WSURL() string { return "ws://" + c.wsLn.Addr().String() }

// ProgramID is the Prova program's address on this chain.
func (c *Chain) ProgramID() solana.PublicKey { return c.cfg.ProgramID }

// Close stops the servers, the clock and the traffic, and drops every
// websocket connection.
func (c *Chain) Close() {
	c.closeOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if c.rpcSrv != nil {
			_ = c.rpcSrv.Shutdown(ctx)
		}
		c.ps.closeAll()
		if c.wsSrv != nil {
			_ = c.wsSrv.Shutdown(ctx)
		}
		c.wg.Wait()
		if err := c.save(); err != nil {
			c.log.Warn("devnet cannot save its chain", "dir", c.cfg.StateDir, "err", err)
		}
	})
}

// clock advances a slot every SlotInterval.
func (c *Chain) clock(ctx context.Context) {
	t := time.NewTicker(c.cfg.SlotInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.AdvanceSlots(1)
		}
	}
}

// AdvanceSlots closes the current slot n times: new blocks, slot
// notifications, and finality for transactions that reach the depth.
func (c *Chain) AdvanceSlots(n int) {
	for i := 0; i < n; i++ {
		c.mu.Lock()
		c.newSlotLocked(c.slot + 1)
		slot, root := c.slot, c.finalizedSlotLocked()
		var final []*txRecord
		if b := c.blocks[root]; b != nil && root+c.cfg.FinalityDepth == slot {
			final = append(final, b.txs...)
		}
		c.ps.enqueue(note{kind: noteSlot, slot: slot, root: root})
		for _, r := range final {
			if !r.dropped {
				c.ps.enqueue(note{kind: noteFinal, rec: r, slot: r.slot})
			}
		}
		c.mu.Unlock()
	}
}

// openAfterLocked opens the chain's next slot: s, or the slot after
// Config.AfterSlot when s is not past it (then the blockhashes of the
// slots skipped over expire, as they would have had the slots passed).
func (c *Chain) openAfterLocked(s uint64) {
	if s > c.cfg.AfterSlot {
		c.newSlotLocked(s)
		return
	}
	c.newSlotLocked(c.cfg.AfterSlot + 1)
	for h, slot := range c.blockhashes {
		if slot+blockhashValidity < c.slot {
			delete(c.blockhashes, h)
		}
	}
	if s > 1 {
		c.log.Info("devnet skips to the slot after the data already stored", "from", s, "to", c.slot)
	}
}

// blockhashOf is slot s's blockhash.
func (c *Chain) blockhashOf(s uint64) solana.Hash {
	var seed [16]byte
	binary.LittleEndian.PutUint64(seed[:8], uint64(c.cfg.Seed))
	binary.LittleEndian.PutUint64(seed[8:], s)
	return solana.Hash(sha256.Sum256(append([]byte("devnet blockhash"), seed[:]...)))
}

// newSlotLocked opens slot s with its block and blockhash.
func (c *Chain) newSlotLocked(s uint64) {
	h := c.blockhashOf(s)
	b := &block{slot: s, time: time.Now().Unix(), blockhash: h}
	c.blocks[s] = b
	c.blockhashes[h] = s
	if s > blockhashValidity {
		if old := c.blocks[s-blockhashValidity-1]; old != nil {
			delete(c.blockhashes, old.blockhash)
		}
	}
	c.slot = s
}

// blockhashValidity is how many slots a blockhash stays valid (Solana: 150).
const blockhashValidity = 150

// Slot is the current (confirmed) slot.
func (c *Chain) Slot() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.slot
}

// FinalizedSlot is the newest finalized slot.
func (c *Chain) FinalizedSlot() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.finalizedSlotLocked()
}

func (c *Chain) finalizedSlotLocked() uint64 {
	if c.slot < c.cfg.FinalityDepth {
		return 0
	}
	return c.slot - c.cfg.FinalityDepth
}

// LatestBlockhash is the current slot's blockhash.
func (c *Chain) LatestBlockhash() solana.Hash {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.blocks[c.slot].blockhash
}

// commitmentSlot maps a commitment name to the newest slot it sees.
func (c *Chain) commitmentSlotLocked(commitment string) uint64 {
	if commitment == "finalized" || commitment == "" || commitment == "max" || commitment == "root" {
		return c.finalizedSlotLocked()
	}
	return c.slot
}

// GetAccount returns a copy of an account (nil when it does not exist).
func (c *Chain) GetAccount(key solana.PublicKey) *Account {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.accounts[key].clone()
}

// SetAccount writes an account directly (genesis-style, no transaction).
func (c *Chain) SetAccount(key solana.PublicKey, a *Account) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a == nil {
		delete(c.accounts, key)
		return
	}
	c.accounts[key] = a.clone()
}

// Event is one event the program emitted in a successful transaction that
// is still on the chain: the ground truth an indexer must reproduce.
type Event struct {
	TxSignature solana.Signature
	Slot        uint64
	BlockTime   int64
	Index       int
	Event       prova.Event
}

// Events lists every program event of successful, not dropped
// transactions, in chain order (by slot, then landing), hidden ones
// included.
func (c *Chain) Events() []Event {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var recs []*txRecord
	for _, r := range c.txs {
		if r.meta.Err == nil {
			recs = append(recs, r)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return ledgerOrder(recs[i], recs[j]) })
	var out []Event
	for _, r := range recs {
		for _, e := range r.events {
			out = append(out, Event{TxSignature: r.sig, Slot: r.slot, BlockTime: r.blockTime, Index: e.Index, Event: e.Event})
		}
	}
	return out
}

// TxInfo describes a transaction on the chain.
type TxInfo struct {
	Signature solana.Signature
	Slot      uint64
	Failed    bool
	Events    int
}

// Transactions lists the transactions that mention the program, oldest
// first.
func (c *Chain) Transactions() []TxInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []TxInfo
	for _, r := range c.byAddr[c.cfg.ProgramID] {
		out = append(out, TxInfo{Signature: r.sig, Slot: r.slot, Failed: r.meta.Err != nil, Events: len(r.events)})
	}
	return out
}
