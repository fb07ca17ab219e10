package verifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// MaxTimeoutSeconds is the requirements' maxTimeoutSeconds: how long a
// payer may take; the blockhash bounds it anyway.
const MaxTimeoutSeconds = 60

// Ledger records payments (store.Store implements it).
type Ledger interface {
	ClaimPayment(ctx context.Context, p store.Payment) (int64, error)
	FinishPayment(ctx context.Context, id int64, status store.PaymentStatus, txSignature, reason string) error
	NotePayment(ctx context.Context, id int64, reason string) error
	PaymentByMessage(ctx context.Context, hash [32]byte) (store.Payment, error)
	PaymentByID(ctx context.Context, paymentID string) (store.Payment, error)
	SaveReceipt(ctx context.Context, id int64, receipt string) (string, error)
	KeepAnswer(ctx context.Context, a store.Answer, expiresAt time.Time, capBytes int64) error
	PaymentAnswer(ctx context.Context, paymentID int64) (store.Answer, error)
	SetAnswerResponse(ctx context.Context, paymentID int64, header, value string) (string, string, error)
	PruneAnswers(ctx context.Context, now time.Time, limit int) (store.Pruned, error)
}

// Deps are what a Verifier works with: its Config, and its connections
// and collaborators.
type Deps struct {
	Config // the tunables, from settings
	// Redis holds the replay guard (nil: the ledger alone guards).
	Redis redis.UniversalClient
	// KeyPrefix prefixes the guard's keys (e.g. "attestd:x402:").
	KeyPrefix string
	Ledger    Ledger // required
	Logger    *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// HTTPClient calls the facilitator (nil: a client that follows no redirects).
	HTTPClient *http.Client
	// Node names this process in the ledger (default: the host name).
	Node string
	// Receipts signs a receipt for every paid answer (nil: none).
	Receipts *receipt.Signer
}

// settler is how payments are checked against the chain and settled.
type settler interface {
	feePayer() (solana.PublicKey, bool)
	recentBlockhash() (solana.Hash, uint64, bool)
	verify(ctx context.Context, p *Payment) *Refusal
	// settle returns the ledger status the settlement ends in: settled,
	// released (nothing charged), pending (the chain decides later) or
	// failed (unknown, for the operator).
	settle(ctx context.Context, p *Payment) (txSig string, status store.PaymentStatus, r *Refusal)
	// check asks the chain about a sent transaction (errNoChain: cannot).
	check(ctx context.Context, sig solana.Signature, lastValid uint64) (chainState, string, error)
}

// errNoChain: this settler cannot ask the chain about a transaction.
var errNoChain = errors.New("x402 verifier: settled by a facilitator: the chain is not asked directly")

// Verifier guards payable routes. It is safe for concurrent use.
type Verifier struct {
	cfg    Config
	log    *slog.Logger
	ledger Ledger
	guard  *replayGuard
	m      *metrics
	s      settler
	node   string
	routes map[string]*route
	signer *receipt.Signer
	now    func() time.Time
	// retention and storeBytes bound the kept answers (answers.go).
	retention  time.Duration
	storeBytes int64
	// base58 of the asset and payTo, encoded once
	assetStr, payToStr string
	// extra is the requirements' extra (fee payer, blockhash hint) as
	// last made: shared, never modified, replaced whole when either moves.
	extra  atomic.Pointer[extraOf]
	cancel context.CancelFunc
	closed <-chan struct{} // closed by Close: background work stops
	// lateReleases counts the releases retried in the background (settle.go).
	lateReleases atomic.Int64
	wg           sync.WaitGroup
	closeMu      sync.Once
}

type route struct {
	Route
	amount    uint64
	terms     x402.ExactTerms
	bazaar    json.RawMessage // the declaration's bazaar extension
	amountStr string
	// bazaarPre and bazaarPost surround the path value's JSON string in
	// a request's bazaar extension (nil: encode it whole).
	bazaarPre, bazaarPost []byte
	// missing is the challenge to a request that carries no payment
	// (made once: its message names the price; shared, never modified).
	missingRef *Refusal
}

// pathPlaceholder stands for the path value in the pre-encoded bazaar.
const pathPlaceholder = "@@attestd-path-value@@"

// New builds a verifier. With a facilitator it reads /supported first
// (retrying in the background while the facilitator does not answer; until
// then payable routes answer 503); a facilitator that answers without our
// network's exact kind is a configuration error.
func New(ctx context.Context, opt Deps) (*Verifier, error) {
	cfg := opt.Config
	if !cfg.Enabled() {
		return nil, errOff
	}
	if opt.Ledger == nil {
		return nil, errors.New("x402 verifier: a ledger is required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Node == "" {
		opt.Node, _ = os.Hostname()
	}
	v := &Verifier{cfg: cfg, log: opt.Logger.With("component", "x402"), ledger: opt.Ledger, m: newMetrics(opt.Registerer),
		node: opt.Node, routes: map[string]*route{}, signer: opt.Receipts, now: time.Now,
		assetStr: cfg.Asset.String(), payToStr: cfg.PayTo.String(),
		guard:     &replayGuard{rdb: opt.Redis, prefix: opt.KeyPrefix, timeout: 500 * time.Millisecond},
		retention: cfg.retention(), storeBytes: cfg.AnswerStoreBytes}
	if v.storeBytes <= 0 {
		v.storeBytes = DefaultAnswerStoreBytes
	}
	runCtx, cancel := context.WithCancel(context.Background())
	v.cancel, v.closed = cancel, runCtx.Done()
	v.wg.Add(1)
	go func() { defer v.wg.Done(); v.pruneLoop(runCtx) }()
	if cfg.SelfSettling() {
		s := newSelfSettler(cfg.FeePayer, cfg.RPCURL, cfg.SettleTimeout)
		s.refreshHint(time.Second) // the first 402 already carries a blockhash hint
		v.s = s
	} else {
		f := newFacilitator(cfg.FacilitatorURL, opt.HTTPClient, cfg, v.log)
		v.s = f
		if err := f.load(ctx); err != nil {
			var ns *errNotSupported
			if errors.As(err, &ns) {
				cancel()
				return nil, err
			}
			v.log.Warn("facilitator not reachable yet; payable routes answer 503 until it is", "url", cfg.FacilitatorURL, "err", err)
			v.wg.Add(1)
			go func() { defer v.wg.Done(); v.retryLoad(runCtx, f) }()
		}
	}
	for _, r := range Routes {
		amount := cfg.Prices[r.Path]
		if amount == 0 {
			continue
		}
		rt := &route{Route: r, amount: amount, terms: x402.ExactTerms{PayTo: cfg.PayTo, Asset: cfg.Asset, Amount: amount, Decimals: cfg.Decimals}}
		rt.amountStr = strconv.FormatUint(amount, 10)
		rt.missingRef = challenge(ReasonMissing, fmt.Sprintf("this route needs an API key in the x-api-key header, or a payment of %s %s (x402: see the PAYMENT-REQUIRED header)",
			x402.FormatAmount(amount, cfg.Decimals), v.assetName()))
		if b, err := json.Marshal(r.Bazaar("")); err == nil {
			rt.bazaar = b
		}
		if r.Input.PathParam != "" {
			// Encoded once around a placeholder: a 402 only splices in
			// its path value.
			if b, err := json.Marshal(r.Bazaar(pathPlaceholder)); err == nil {
				if pre, post, ok := bytes.Cut(b, []byte(`"`+pathPlaceholder+`"`)); ok && !bytes.Contains(post, []byte(pathPlaceholder)) {
					rt.bazaarPre, rt.bazaarPost = pre, post
				}
			}
		}
		if err := rt.terms.Prepare(); err != nil {
			cancel()
			return nil, fmt.Errorf("x402 verifier: derive payTo's token account: %w", err)
		}
		v.routes[r.Path] = rt
	}
	return v, nil
}

func (v *Verifier) retryLoad(ctx context.Context, f *facilitator) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
		err := f.load(ctx)
		if err == nil {
			pk, _ := f.feePayer()
			v.log.Info("facilitator reachable", "url", v.cfg.FacilitatorURL, "fee_payer", pk.String())
			return
		}
		v.log.Warn("facilitator still not reachable", "url", v.cfg.FacilitatorURL, "err", err)
	}
}

// Close stops background work.
func (v *Verifier) Close() {
	v.closeMu.Do(func() {
		v.cancel()
		v.wg.Wait()
	})
}

// Config is the configuration in use.
func (v *Verifier) Config() Config { return v.cfg }

// FeePayer is the fee payer put in requirements (false: not known yet).
func (v *Verifier) FeePayer() (solana.PublicKey, bool) { return v.s.feePayer() }

// Payable reports whether a route path (below /api/v1, as registered) has
// a price.
func (v *Verifier) Payable(path string) bool {
	_, ok := v.routes[path]
	return ok
}

// Receipts is the receipt signer (nil: no receipts).
func (v *Verifier) Receipts() *receipt.Signer { return v.signer }

func (v *Verifier) assetName() string {
	if v.cfg.Asset == v.cfg.Network.USDC {
		return "USDC"
	}
	return "of token " + v.cfg.Asset.String()
}

// Preflight logs what would make every payment fail (self-settling only:
// payTo's token account missing, no SOL for fees). It never fails.
func (v *Verifier) Preflight(ctx context.Context) {
	s, ok := v.s.(*selfSettler)
	if !ok {
		return
	}
	for _, rt := range v.routes {
		for _, w := range s.preflight(ctx, rt.terms.Destination(solana.TokenProgramID)) {
			v.log.Warn("x402 preflight: " + w)
		}
		return
	}
}
