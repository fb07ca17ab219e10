package indexer

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/store"
	"github.com/gagliardetto/solana-go/rpc"
)

// Status is the indexer's progress as /health reports it (the same fields
// as app.IndexerStatus, so one converts to the other).
type Status struct {
	LastIndexedSlot uint64            `json:"lastIndexedSlot"`
	ChainSlot       uint64            `json:"chainSlot"`
	LagSlots        uint64            `json:"lagSlots"`
	LastIndexedAt   *attestation.Time `json:"lastIndexedAt"`
	Synced          bool              `json:"synced"`
	// NotSynced says why Synced is false ("" when it is true); /health
	// gives it as a reason, not as a field.
	NotSynced string `json:"-"`
}

// Status is this process's view (meaningful while it leads).
func (ix *Indexer) Status() Status {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.status
	if c := ix.lastChain.Load(); c > s.ChainSlot {
		s.ChainSlot = c
	}
	if s.ChainSlot > s.LastIndexedSlot {
		s.LagSlots = s.ChainSlot - s.LastIndexedSlot
	}
	switch {
	case !s.Synced:
		s.NotSynced = "its first sync has not completed"
	case s.LagSlots > ix.cfg.SyncedLagSlots:
		s.Synced = false
		s.NotSynced = behind(s.LagSlots, ix.cfg.SyncedLagSlots)
	}
	return s
}

func behind(lag, allowed uint64) string {
	return fmt.Sprintf("%d slots behind the chain (at most %d counts as synced)", lag, allowed)
}

// StatusReader reads the indexer's status from Postgres, for API
// processes: the head checkpoint says through which slot the index is
// complete and when it last was; the chain slot comes from the RPC node
// when one is given (cached for a second), else from the head.
type StatusReader struct {
	st             *store.Store
	rpc            *rpc.Client
	name, headName string
	// SyncedLagSlots and StaleAfter decide Synced: at most this many slots
	// behind, and a completed sync no older than StaleAfter.
	SyncedLagSlots uint64
	StaleAfter     time.Duration

	mu        sync.Mutex
	chain     uint64
	chainRead time.Time
}

// NewStatusReader reads the default checkpoints; rpcURL may be empty.
func NewStatusReader(st *store.Store, rpcURL string) *StatusReader {
	r := &StatusReader{st: st, name: CheckpointName, headName: HeadCheckpointName, SyncedLagSlots: 150, StaleAfter: 30 * time.Second}
	if rpcURL != "" {
		r.rpc = rpc.New(rpcURL)
	}
	return r
}

// Read returns the status; a never-run indexer reads as zero, not synced.
func (r *StatusReader) Read(ctx context.Context) (Status, error) {
	var s Status
	cp, okCP, err := r.st.Checkpoint(ctx, r.name)
	if err != nil {
		return s, err
	}
	head, okHead, err := r.st.Checkpoint(ctx, r.headName)
	if err != nil {
		return s, err
	}
	var at time.Time
	if okCP {
		s.LastIndexedSlot, at = cp.Slot, cp.UpdatedAt
	}
	if okHead {
		s.LastIndexedSlot, at = max(s.LastIndexedSlot, head.Slot), head.UpdatedAt
		s.ChainSlot = head.Slot
	}
	if c, ok := r.chainSlot(ctx); ok {
		s.ChainSlot = c
	}
	s.ChainSlot = max(s.ChainSlot, s.LastIndexedSlot)
	s.LagSlots = s.ChainSlot - s.LastIndexedSlot
	if !at.IsZero() {
		t := attestation.At(at)
		s.LastIndexedAt = &t
	}
	age := time.Since(head.UpdatedAt)
	switch {
	case !okHead && !okCP:
		s.NotSynced = "no indexer has run against this database yet"
	case !okHead:
		s.NotSynced = "no completed sync is recorded"
	case s.LagSlots > r.SyncedLagSlots:
		s.NotSynced = behind(s.LagSlots, r.SyncedLagSlots)
	case age > r.StaleAfter:
		s.NotSynced = fmt.Sprintf("no completed sync for %s (at most %s counts as synced)", age.Round(time.Second), r.StaleAfter)
	default:
		s.Synced = true
	}
	return s, nil
}

func (r *StatusReader) chainSlot(ctx context.Context) (uint64, bool) {
	if r.rpc == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.chainRead) < time.Second {
		return r.chain, r.chain > 0
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := r.rpc.GetSlot(cctx, rpc.CommitmentConfirmed)
	r.chainRead = time.Now()
	if err != nil {
		r.chain = 0
		return 0, false
	}
	r.chain = s
	return s, true
}

// ChainProbe reports whether the RPC node answers getHealth, for /health's
// chain section; the answer is cached for two seconds.
type ChainProbe struct {
	rpc     *rpc.Client
	display string

	mu      sync.Mutex
	ok      bool
	checked time.Time
}

// NewChainProbe probes rpcURL; RPC() shows it without credentials (no user
// info, path or query, where hosted providers put API keys).
func NewChainProbe(rpcURL string) *ChainProbe {
	return &ChainProbe{rpc: rpc.New(rpcURL), display: redactURL(rpcURL)}
}

// RPC is the endpoint as it may be shown publicly.
func (p *ChainProbe) RPC() string { return p.display }

// Reachable reports whether the node answered getHealth "ok" recently.
func (p *ChainProbe) Reachable(ctx context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.checked) < 2*time.Second {
		return p.ok
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	h, err := p.rpc.GetHealth(cctx)
	p.ok, p.checked = err == nil && h == rpc.HealthOk, time.Now()
	return p.ok
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
