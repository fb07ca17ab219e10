package verifier

import (
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/tracing"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/attestd/attestd/internal/store"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/x402"
	"github.com/gagliardetto/solana-go"
)

// maxFacilitatorBody bounds what is read of a facilitator's answer.
const maxFacilitatorBody = 1 << 20

// facilitator verifies and settles through an x402 facilitator's HTTP API.
// Anything but a well-formed success is a failure.
type facilitator struct {
	base          string
	http          *http.Client
	timeout       time.Duration
	settleTimeout time.Duration
	network       x402.Network
	log           *slog.Logger

	mu    sync.RWMutex
	payer solana.PublicKey
}

func newFacilitator(base string, hc *http.Client, cfg Config, log *slog.Logger) *facilitator {
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: tracing.Transport("x402 facilitator", nil)}
	}
	return &facilitator{base: strings.TrimRight(base, "/"), http: hc, timeout: cfg.FacilitatorTimeout,
		settleTimeout: cfg.SettleTimeout, network: cfg.Network, log: log}
}

func (f *facilitator) feePayer() (solana.PublicKey, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.payer, !f.payer.IsZero()
}

func (f *facilitator) recentBlockhash() (solana.Hash, uint64, bool) { return solana.Hash{}, 0, false }

// errNotSupported: the facilitator answered but does not settle our kind.
type errNotSupported struct{ msg string }

func (e *errNotSupported) Error() string { return e.msg }

// load reads /supported and keeps the fee payer of our network's exact kind.
func (f *facilitator) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var out struct {
		Kinds []struct {
			X402Version int            `json:"x402Version"`
			Scheme      string         `json:"scheme"`
			Network     string         `json:"network"`
			Extra       map[string]any `json:"extra"`
		} `json:"kinds"`
	}
	status, body, err := f.call(ctx, http.MethodGet, "/supported", nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("facilitator %s/supported answered %d: %s", f.base, status, excerpt.Of(string(body), 200))
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("facilitator %s/supported answered no JSON of the expected shape: %w", f.base, err)
	}
	for _, k := range out.Kinds {
		if k.X402Version != 2 || k.Scheme != x402.SchemeExact || k.Network != f.network.CAIP2 {
			continue
		}
		s, _ := k.Extra["feePayer"].(string)
		pk, err := solana.PublicKeyFromBase58(s)
		if err != nil {
			return &errNotSupported{fmt.Sprintf("facilitator %s lists exact on %s without a valid extra.feePayer", f.base, f.network.CAIP2)}
		}
		f.mu.Lock()
		f.payer = pk
		f.mu.Unlock()
		return nil
	}
	return &errNotSupported{fmt.Sprintf("facilitator %s does not settle x402 v2 exact payments on %s (%s); check ATTESTD_X402_FACILITATOR_URL and ATTESTD_X402_NETWORK",
		f.base, f.network.CAIP2, f.network.Name)}
}

func (f *facilitator) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := f.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("facilitator %s%s: %w", f.base, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxFacilitatorBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("facilitator %s%s: read answer: %w", f.base, path, err)
	}
	if len(b) > maxFacilitatorBody {
		return 0, nil, fmt.Errorf("facilitator %s%s: answer larger than %d bytes", f.base, path, maxFacilitatorBody)
	}
	return res.StatusCode, b, nil
}

type facilitatorRequest struct {
	X402Version         int                 `json:"x402Version"`
	PaymentPayload      x402.PaymentPayload `json:"paymentPayload"`
	PaymentRequirements x402.Requirements   `json:"paymentRequirements"`
}

func (f *facilitator) request(p *Payment) facilitatorRequest {
	// Always v2, with our requirements: never the client's echo.
	pl := x402.NewPaymentPayload(p.Resource, p.Requirements, p.Tx.Raw)
	return facilitatorRequest{X402Version: 2, PaymentPayload: pl, PaymentRequirements: p.Requirements}
}

var reasonWord = regexp.MustCompile(`^[a-z0-9_]{1,100}$`)

// reasonOf keeps a facilitator's reason when it is a plain code.
func reasonOf(s string) string {
	if reasonWord.MatchString(s) {
		return s
	}
	return "unspecified"
}

func (f *facilitator) verify(ctx context.Context, p *Payment) *Refusal {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	status, body, err := f.call(ctx, http.MethodPost, "/verify", f.request(p))
	if err != nil {
		f.log.Warn("facilitator verify failed", "err", err)
		return unavailable(ReasonFacilitatorDown, "the payment facilitator did not answer; nothing was charged; try again shortly")
	}
	var out struct {
		IsValid        *bool  `json:"isValid"`
		InvalidReason  string `json:"invalidReason"`
		InvalidMessage string `json:"invalidMessage"`
	}
	if jerr := json.Unmarshal(body, &out); jerr != nil || out.IsValid == nil {
		f.log.Warn("facilitator verify answered nonsense", "status", status, "body", excerpt.Of(string(body), 200))
		return unavailable(ReasonFacilitatorDown, fmt.Sprintf("the payment facilitator answered /verify with status %d and no verdict; nothing was charged; try again shortly", status))
	}
	if *out.IsValid && status == http.StatusOK {
		return nil
	}
	if *out.IsValid {
		return unavailable(ReasonFacilitatorDown, fmt.Sprintf("the payment facilitator answered /verify with status %d; nothing was charged; try again shortly", status))
	}
	msg := "payment refused by the facilitator: " + reasonOf(out.InvalidReason)
	if out.InvalidMessage != "" {
		msg += " (" + excerpt.Of(out.InvalidMessage, 200) + ")"
	}
	r := challenge(ReasonFacilitatorRefused, msg)
	return r
}

// settle asks the facilitator to settle. Without a transaction signature
// the chain cannot be asked later, so a failure stays failed (for the
// operator), as before.
func (f *facilitator) settle(ctx context.Context, p *Payment) (string, store.PaymentStatus, *Refusal) {
	ctx, cancel := context.WithTimeout(ctx, f.settleTimeout)
	defer cancel()
	status, body, err := f.call(ctx, http.MethodPost, "/settle", f.request(p))
	if err != nil {
		f.log.Warn("facilitator settle failed", "err", err)
		return "", store.PaymentFailed, &Refusal{Reason: ReasonFacilitatorDown, Message: "the payment facilitator did not answer the settlement; the payment may or may not have moved (check its transaction before paying again)"}
	}
	var out struct {
		Success      *bool  `json:"success"`
		ErrorReason  string `json:"errorReason"`
		ErrorMessage string `json:"errorMessage"`
		Transaction  string `json:"transaction"`
		Network      string `json:"network"`
	}
	if jerr := json.Unmarshal(body, &out); jerr != nil || out.Success == nil {
		f.log.Warn("facilitator settle answered nonsense", "status", status, "body", excerpt.Of(string(body), 200))
		return "", store.PaymentFailed, &Refusal{Reason: ReasonFacilitatorDown, Message: fmt.Sprintf("the payment facilitator answered /settle with status %d and no result", status)}
	}
	if !*out.Success {
		msg := "the facilitator could not settle the payment: " + reasonOf(out.ErrorReason)
		if out.ErrorMessage != "" {
			msg += " (" + excerpt.Of(out.ErrorMessage, 200) + ")"
		}
		return "", store.PaymentFailed, &Refusal{Reason: ReasonSettleFailed, Message: msg}
	}
	sig, serr := solana.SignatureFromBase58(out.Transaction)
	if status != http.StatusOK || serr != nil || sig.IsZero() || out.Network != f.network.CAIP2 {
		f.log.Warn("facilitator settle answered a malformed success", "status", status, "body", excerpt.Of(string(body), 200))
		return "", store.PaymentFailed, &Refusal{Reason: ReasonFacilitatorDown, Message: "the payment facilitator answered a malformed settlement (no transaction signature, or another network)"}
	}
	return sig.String(), store.PaymentSettled, nil
}

// check cannot ask the chain: a facilitator's transaction signature is
// known only once it settled.
func (f *facilitator) check(context.Context, solana.Signature, uint64) (chainState, string, error) {
	return stateInFlight, "", errNoChain
}
