package verifier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/tracing"
	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
)

// ReconcileVars lists the variables ReconcilerConfigFromEnv reads (besides
// ATTESTD_X402_RPC_URL, in Vars).
var ReconcileVars = []config.Var{
	{Name: "ATTESTD_X402_RECONCILE_INTERVAL", Default: "10s", Help: "attestd index: how often open payments (pending, failed) are settled or released against the chain; 0 turns the reconciler off"},
}

// DefaultReconcileInterval is how often the reconciler looks.
const DefaultReconcileInterval = 10 * time.Second

// reconcileBatch bounds the rows one pass locks.
const reconcileBatch = 200

// ReconcileLedger is the part of the store the reconciler uses.
type ReconcileLedger interface {
	ReconcilePayments(ctx context.Context, limit int, decide func(context.Context, store.Payment) store.Verdict) (int, error)
}

// ReconcilerOptions configure a Reconciler.
type ReconcilerOptions struct {
	Ledger   ReconcileLedger // required
	RPCURL   string          // required: the Solana RPC the payments were sent to
	Interval time.Duration   // default DefaultReconcileInterval
	Logger   *slog.Logger
	// Recover, when its PayTo is set, also recovers the settlements to
	// that payTo that the ledger does not hold (recover.go); Ledger must
	// then be a RecoverLedger too.
	Recover RecoverTerms
	// Registerer receives the reconciler's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// RecoverTerms say which payments the recovery looks for: transfers of
// Asset to PayTo's associated token accounts, recorded under Network
// (CAIP-2).
type RecoverTerms struct {
	PayTo, Asset solana.PublicKey
	Network      string
}

// Reconciler settles or releases open payments (pending, or failed with a
// transaction signature) as the chain says: landed is settled; landed with
// an error, or not landed once the chain is past the transaction's last
// valid block height, is released (not charged). Rows are locked FOR
// UPDATE SKIP LOCKED, so any number may run: one acts on a row at a time.
type Reconciler struct {
	ledger   ReconcileLedger
	chain    chainCheck
	interval time.Duration
	log      *slog.Logger
	rec      *recovery // nil: no recovery
	m        reconcilerMetrics
}

type reconcilerMetrics struct {
	recovered      prometheus.Counter
	recoveredUnits prometheus.Counter
	oldestOpen     prometheus.Gauge
}

func newReconcilerMetrics(reg prometheus.Registerer) reconcilerMetrics {
	m := reconcilerMetrics{
		recovered: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_payments_recovered_total",
			Help: "settled payments found on chain that the ledger did not hold (a database restored from an older backup), recorded"}),
		recoveredUnits: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_x402_payments_recovered_units_total",
			Help: "atomic units of the asset those recovered payments paid"}),
		oldestOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_x402_oldest_open_payment_seconds",
			Help: "how long the oldest payment not settled or released yet (pending, or failed awaiting the chain) has waited; 0: none"}),
	}
	if reg != nil {
		m.recovered, m.recoveredUnits = metric.Register(reg, m.recovered), metric.Register(reg, m.recoveredUnits)
		m.oldestOpen = metric.Register(reg, m.oldestOpen)
	}
	return m
}

// NewReconciler builds a reconciler.
func NewReconciler(opt ReconcilerOptions) (*Reconciler, error) {
	if opt.Ledger == nil || opt.RPCURL == "" {
		return nil, errors.New("x402 reconciler: a ledger and a Solana RPC URL are required")
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultReconcileInterval
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rc := &Reconciler{ledger: opt.Ledger, chain: chainCheck{rpc: tracing.SolanaRPC(opt.RPCURL)}, interval: opt.Interval,
		log: opt.Logger.With("component", "x402-reconciler"), m: newReconcilerMetrics(opt.Registerer)}
	if t := opt.Recover; !t.PayTo.IsZero() {
		rl, ok := opt.Ledger.(RecoverLedger)
		if !ok {
			return nil, errors.New("x402 reconciler: recovering settlements needs a ledger that can record them")
		}
		rc.rec = &recovery{ledger: rl, rpc: rc.chain.rpc, network: t.Network, terms: x402.ExactTerms{PayTo: t.PayTo, Asset: t.Asset}}
		if err := rc.rec.terms.Prepare(); err != nil {
			return nil, fmt.Errorf("x402 reconciler: %w", err)
		}
	}
	return rc, nil
}

// ReconcileInterval reads ATTESTD_X402_RECONCILE_INTERVAL (0: off).
func ReconcileInterval(getenv func(string) string) (time.Duration, error) {
	e := config.NewEnv(getenv)
	d := e.Duration("ATTESTD_X402_RECONCILE_INTERVAL", DefaultReconcileInterval, 0, time.Hour)
	return d, e.Err()
}

// Run reconciles every interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reconcile payments", "err", err)
		}
		r.afterRound(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce decides what it can of the open rows now; it returns how many
// it settled or released.
func (r *Reconciler) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		// One block height per batch, read before any row's status (see
		// chainCheck.state), not one per row.
		var height uint64
		var herr error
		read := false
		n, err := r.ledger.ReconcilePayments(ctx, reconcileBatch, func(ctx context.Context, p store.Payment) store.Verdict {
			if !read {
				read = true
				if height, herr = r.chain.blockHeight(ctx); herr != nil {
					r.log.Warn("cannot read the block height", "err", herr)
				}
			}
			if herr != nil {
				return store.Verdict{}
			}
			return r.decide(ctx, p, height)
		})
		total += n
		if err != nil || n < reconcileBatch {
			return total, err
		}
	}
}

// decide asks the chain about one open row ("" status: still open).
func (r *Reconciler) decide(ctx context.Context, p store.Payment, height uint64) store.Verdict {
	sig, err := solana.SignatureFromBase58(p.TxSignature)
	if err != nil {
		return store.Verdict{}
	}
	st, reason, err := r.chain.stateAt(ctx, sig, p.LastValidHeight, height)
	if err != nil {
		r.log.Warn("cannot ask the chain about a payment", "id", p.ID, "tx", p.TxSignature, "err", err)
		return store.Verdict{}
	}
	switch st {
	case stateLanded:
		r.log.Info("payment settled on chain", "id", p.ID, "tx", p.TxSignature, "was", p.Status)
		return store.Verdict{Status: store.PaymentSettled}
	case stateFailed, stateExpired:
		r.log.Info("payment released", "id", p.ID, "tx", p.TxSignature, "was", p.Status, "reason", reason)
		return store.Verdict{Status: store.PaymentReleased, Reason: reason}
	}
	// Rows from before the last valid height was recorded: a blockhash
	// lives 60 to 90 s, so long past ReplayTTL the transaction cannot land.
	if p.LastValidHeight == 0 && time.Since(p.CreatedAt) > ReplayTTL {
		reason := fmt.Sprintf("the payment transaction never landed (not on chain %s after it was made); not charged", ReplayTTL)
		return store.Verdict{Status: store.PaymentReleased, Reason: reason}
	}
	return store.Verdict{}
}

// afterRound recovers lost settlements (when configured) and reads the
// age of the oldest open payment.
func (r *Reconciler) afterRound(ctx context.Context) {
	if r.rec != nil {
		if _, err := r.recoverSettlements(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("payments recovery", "err", err)
		}
	}
	if l, ok := r.ledger.(interface {
		OldestOpenPayment(context.Context) (time.Duration, error)
	}); ok {
		if age, err := l.OldestOpenPayment(ctx); err == nil {
			r.m.oldestOpen.Set(age.Seconds())
		}
	}
}

// Recover runs the settlement recovery once (for tests and `attestd
// payments recover`): how many payments it added to the ledger.
func (r *Reconciler) Recover(ctx context.Context) (int, error) {
	if r.rec == nil {
		return 0, errors.New("x402 reconciler: no payTo to recover settlements to")
	}
	return r.recoverSettlements(ctx)
}
