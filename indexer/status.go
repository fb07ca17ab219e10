package indexer

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
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
	if c := ix.lastChain.Load(); c > s.ChainSlot && s.NotSynced == "" {
		s.ChainSlot = c
	}
	if s.ChainSlot > s.LastIndexedSlot {
		s.LagSlots = s.ChainSlot - s.LastIndexedSlot
	}
	switch {
	case !s.Synced && s.NotSynced != "":
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
// complete and when it last was; the chain slot and genesis hash come from
// the RPC node when one is given (cached for a second), else the chain
// slot from the head. A chain with another genesis than the one recorded,
// or whose slot is behind the checkpoint, is never synced.
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
	genesis   string
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

// statusInput is what the status is judged from.
type statusInput struct {
	cp, head        store.Checkpoint
	okCP, okHead    bool
	recordedGenesis string // "" when none is recorded
	chainGenesis    string // "" when the node did not say
	chainSlot       uint64
	chainKnown      bool // the RPC node answered getSlot
	syncedLag       uint64
	staleAfter      time.Duration
	now             time.Time
}

// Read returns the status; a never-run indexer reads as zero, not synced.
func (r *StatusReader) Read(ctx context.Context) (Status, error) {
	in := statusInput{syncedLag: r.SyncedLagSlots, staleAfter: r.StaleAfter, now: time.Now()}
	var err error
	if in.cp, in.okCP, err = r.st.Checkpoint(ctx, r.name); err != nil {
		return Status{}, err
	}
	if in.head, in.okHead, err = r.st.Checkpoint(ctx, r.headName); err != nil {
		return Status{}, err
	}
	if in.recordedGenesis, _, err = r.st.ChainGenesis(ctx, r.name); err != nil {
		return Status{}, err
	}
	in.chainSlot, in.chainGenesis, in.chainKnown = r.chainState(ctx)
	return judgeStatus(in), nil
}

// judgeStatus decides the status from the checkpoints and the chain. The
// chain slot shown is the node's whenever it answered, never raised to the
// checkpoint's: a chain behind the index is reported, not hidden.
func judgeStatus(in statusInput) Status {
	var s Status
	var at time.Time
	if in.okCP {
		s.LastIndexedSlot, at = in.cp.Slot, in.cp.UpdatedAt
	}
	if in.okHead {
		s.LastIndexedSlot, at = max(s.LastIndexedSlot, in.head.Slot), in.head.UpdatedAt
		s.ChainSlot = in.head.Slot
	}
	if in.chainKnown {
		s.ChainSlot = in.chainSlot
	} else {
		s.ChainSlot = max(s.ChainSlot, s.LastIndexedSlot)
	}
	if s.ChainSlot > s.LastIndexedSlot {
		s.LagSlots = s.ChainSlot - s.LastIndexedSlot
	}
	if !at.IsZero() {
		t := attestation.At(at)
		s.LastIndexedAt = &t
	}
	age := in.now.Sub(in.head.UpdatedAt)
	switch {
	case in.recordedGenesis != "" && in.chainGenesis != "" && in.recordedGenesis != in.chainGenesis:
		s.NotSynced = otherGenesis(in.recordedGenesis, in.chainGenesis)
	case in.chainKnown && (in.okCP || in.okHead) && chainIsBehind(in.chainSlot, s.LastIndexedSlot, in.syncedLag):
		s.NotSynced = chainBehind(in.chainSlot, s.LastIndexedSlot)
	case !in.okHead && !in.okCP:
		s.NotSynced = "no indexer has run against this database yet"
	case !in.okHead:
		s.NotSynced = "no completed sync is recorded"
	case s.LagSlots > in.syncedLag:
		s.NotSynced = behind(s.LagSlots, in.syncedLag)
	case age > in.staleAfter:
		s.NotSynced = fmt.Sprintf("no completed sync for %s (at most %s counts as synced)", age.Round(time.Second), in.staleAfter)
	default:
		s.Synced = true
	}
	return s
}

// chainIsBehind reports whether the chain's slot is further below the
// checkpoint's than allowed (a node behind a load balancer may trail the
// one the indexer asked by a few slots; a reset chain trails by far more).
func chainIsBehind(chainSlot, checkpoint, allowed uint64) bool {
	return chainSlot+allowed < checkpoint
}

// chainState is the node's confirmed slot and genesis hash, cached for a
// second; ok is false when the slot could not be read.
func (r *StatusReader) chainState(ctx context.Context) (slot uint64, genesis string, ok bool) {
	if r.rpc == nil {
		return 0, "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.chainRead) < time.Second {
		return r.chain, r.genesis, r.chain > 0
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r.chainRead = time.Now()
	s, err := r.rpc.GetSlot(cctx, rpc.CommitmentConfirmed)
	if err != nil {
		r.chain, r.genesis = 0, ""
		return 0, "", false
	}
	r.chain = s
	if g, err := r.rpc.GetGenesisHash(cctx); err == nil {
		r.genesis = g.String()
	} else {
		r.genesis = ""
	}
	return s, r.genesis, true
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
