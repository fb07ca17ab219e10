package indexer

import (
	"github.com/attestd/attestd/internal/batchsize"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/prometheus/client_golang/prometheus"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/pglock"
	"github.com/attestd/attestd/internal/store"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// settledMemory bounds how many decided transactions without rows an
// indexer remembers (so reconciliations do not fetch them again).
const settledMemory = 100_000

// Indexer indexes the program into the store. Run it with Run; any number
// of indexers may run against one database, one writes at a time.
type Indexer struct {
	cfg Config
	st  *store.Store
	rpc *rpc.Client
	log *slog.Logger
	m   *metrics
	// clock turns the lag in slots into seconds (attestd_indexer_lag_seconds).
	clock slotClock

	trigger chan struct{}

	mu     sync.Mutex
	status Status
	// Leader-only state: cp is the saved checkpoint; listed is where the
	// sync's next listing stops (the newest transaction it stored), which
	// is past cp while a transaction it listed is pending.
	cp        store.Checkpoint
	hasCP     bool
	listed    store.Checkpoint
	hasListed bool
	pending   map[solana.Signature]*pendingTx
	pendSeq   uint64
	settled   *sigSet // recently decided transactions that leave no rows

	leader    atomic.Bool
	wsUp      atomic.Bool
	caughtUp  atomic.Bool
	ingested  atomic.Int64
	lastChain atomic.Uint64
	waiting   atomic.Bool   // the chain is behind the checkpoint (logged once)
	headSlot  atomic.Uint64 // the head checkpoint: the index is complete through it
	// frontierChecked: the slot up to which this process checked the
	// chain's finalized listing against the store (advanceLogFrontier).
	frontierChecked atomic.Uint64
	// reconciling serialises reconciliations (the finalized window's and
	// the frontier's), so one sees what the other repaired.
	reconciling sync.Mutex
	// chainOK: the last sync found the chain at or past the checkpoint;
	// until then, and while the chain is behind, the finality, pending
	// and reconciliation loops change nothing.
	chainOK atomic.Bool
	// size is how many records a batch may hold now.
	size *batchsize.Size
}

// New checks the configuration and makes an indexer over st.
func New(cfg Config, st *store.Store) (*Indexer, error) {
	if st == nil {
		return nil, errors.New("indexer: nil store")
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("indexer: %w", err)
	}
	ix := &Indexer{
		cfg: cfg, st: st, rpc: tracing.SolanaRPC(cfg.RPCURL),
		log:     cfg.Logger.With("component", "indexer"),
		m:       newMetrics(cfg.Registerer),
		trigger: make(chan struct{}, 1),
		pending: map[solana.Signature]*pendingTx{},
		settled: newSigSet(settledMemory),
		size:    batchsize.New(cfg.ChunkRecords),
	}
	ix.m.batchRecords.Set(float64(cfg.ChunkRecords))
	metric.Register(cfg.Registerer, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attestd_indexer_lag_seconds",
		Help: "How long ago the chain first stood past the slot through which the index is complete (0: caught up with every slot seen)."},
		func() float64 { return ix.clock.lag(time.Now()).Seconds() }))
	return ix, nil
}

// IsLeader reports whether this indexer currently holds the writer lock.
func (ix *Indexer) IsLeader() bool { return ix.leader.Load() }

// Ingested is how many attestations this indexer newly stored.
func (ix *Indexer) Ingested() int64 { return ix.ingested.Load() }

// Run campaigns for the writer lock and, while it holds it, indexes. It
// returns when ctx ends (nil) and keeps campaigning after losing the lock.
func (ix *Indexer) Run(ctx context.Context) error {
	defer ix.rpc.Close()
	logged := false
	lock := pglock.Lock{Name: "writer lock", Key: ix.cfg.LockKey,
		Conn: ix.st.Pool().Config().ConnConfig, Retry: ix.cfg.LockRetry}
	return lock.Run(ctx, pglock.Campaign{
		Term: func(ctx context.Context, conn *pgx.Conn) error {
			ix.leader.Store(true)
			ix.m.leader.Set(1)
			ix.log.Info("indexer elected writer", "rpc", ix.cfg.RPCURL, "program", ix.cfg.ProgramID.String())
			err := ix.lead(ctx, conn)
			ix.leader.Store(false)
			ix.m.leader.Set(0)
			if !IsChainMismatch(err) {
				ix.wsUp.Store(false)
				ix.m.wsConnected.Set(0)
			}
			return err
		},
		Waiting: func(err error) {
			if err != nil {
				ix.log.Warn("indexer cannot try the writer lock", "err", err)
			} else if !logged {
				ix.log.Info("another indexer is writing; standing by")
				logged = true
			}
		},
		Fatal: IsChainMismatch,
		Lost: func(err error) {
			ix.log.Warn("indexer lost the writer role; campaigning again", "err", err)
		},
	})
}

// lead runs the writer's loops until ctx ends or the lock connection dies.
func (ix *Indexer) lead(ctx context.Context, conn *pgx.Conn) error {
	ix.chainOK.Store(false)
	if err := ix.checkChain(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ix.holdLock(gctx, conn) })
	g.Go(func() error { return ix.syncLoop(gctx) })
	g.Go(func() error { ix.liveLoop(gctx); return nil })
	g.Go(func() error { ix.finalityLoop(gctx); return nil })
	g.Go(func() error { ix.pendingLoop(gctx); return nil })
	g.Go(func() error { ix.reconcileLoop(gctx); return nil })
	return g.Wait()
}

// holdLock pings the lock's connection; when it fails the lock is gone
// and the leader must stop writing.
func (ix *Indexer) holdLock(ctx context.Context, conn *pgx.Conn) error {
	if err := pglock.Watch(ctx, conn); errors.Is(err, pglock.ErrLost) {
		return fmt.Errorf("writer %w", err) // "writer lock connection lost: …"
	} else {
		return err
	}
}

// Trigger asks the leader for a sync now (a websocket notification does).
func (ix *Indexer) Trigger() {
	select {
	case ix.trigger <- struct{}{}:
	default:
	}
}

// syncLoop syncs on triggers and on the poll interval (shorter while the
// websocket is down).
func (ix *Indexer) syncLoop(ctx context.Context) error {
	if err := ix.loadCheckpoint(ctx); err != nil {
		return err
	}
	backoff := 200 * time.Millisecond
	for {
		err := ix.syncOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := ix.cfg.PollInterval
		if !ix.wsUp.Load() {
			wait = ix.cfg.FallbackPoll
		}
		if err != nil {
			ix.log.Warn("indexer sync failed; retrying", "err", err, "in", backoff.String())
			wait = backoff
			backoff = min(backoff*2, 10*time.Second)
		} else {
			backoff = 200 * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-ix.trigger:
			t.Stop()
		case <-t.C:
		}
	}
}

func (ix *Indexer) loadCheckpoint(ctx context.Context) error {
	cp, ok, err := ix.st.Checkpoint(ctx, ix.cfg.Checkpoint)
	if err != nil {
		return fmt.Errorf("load checkpoint: %w", err)
	}
	head, okHead, err := ix.st.Checkpoint(ctx, ix.headName())
	if err != nil {
		return fmt.Errorf("load head checkpoint: %w", err)
	}
	ix.headSlot.Store(0)
	ix.frontierChecked.Store(0) // checked again from the stored frontier
	if okHead {
		ix.headSlot.Store(head.Slot)
	}
	ix.mu.Lock()
	ix.cp, ix.hasCP = cp, ok
	ix.listed, ix.hasListed = cp, ok
	// A new term starts from what is stored: pending transactions of an
	// earlier term are listed again after the checkpoint they held.
	ix.pending = map[solana.Signature]*pendingTx{}
	ix.m.pending.Set(0)
	ix.mu.Unlock()
	if ok {
		ix.log.Info("indexer resumes from checkpoint", "slot", cp.Slot, "signature", cp.Signature)
	} else {
		ix.log.Info("indexer starts from the program's first transaction")
	}
	return nil
}

// rpcCtx bounds one RPC call.
func (ix *Indexer) rpcCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ix.cfg.RPCTimeout)
}
