package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// Payer pays for premium answers per request with x402 (USDC on Solana)
// when the client has no API key. Paying is opt-in: without WithPayer a 402
// is returned as an *APIError.
type Payer struct {
	// Key owns the paying wallet (its associated token account of the
	// asset pays) and signs each payment.
	Key solana.PrivateKey
	// MaxAmount is the most one payment may cost, in atomic units of the
	// asset (USDC: 10000 is 0.01). A dearer 402 is returned unpaid.
	MaxAmount uint64
	// RPCURL is a Solana RPC for a recent blockhash and the mint's
	// decimals when the 402 does not give them (optional for USDC on
	// a service that sends a blockhash hint).
	RPCURL string
	// Approve, when set, is asked before each payment (a spending cap, a
	// prompt); an error refuses to pay and is returned.
	Approve func(ctx context.Context, q x402.Requirements) error
}

// Receipt is one payment the client made.
type Receipt struct {
	Method, Path string
	Amount       uint64 // atomic units
	Asset        string
	Network      string
	Transaction  string // the settled transaction's signature
	Payer        string
	// Signed is the service's signed receipt (a compact JWS, "" when the
	// service issues none); Claims what it says once verified under the
	// service's published key and matched to this answer; ReceiptErr why
	// it did not verify (wrapping ErrBadReceipt), the answer being kept.
	Signed     string
	Claims     *receipt.Payload
	ReceiptErr error
}

// Forward carries a payment made elsewhere (an MCP client's
// _meta["x402/payment"]) through one call: Payment ("" for none) is sent
// as PAYMENT-SIGNATURE as is, the client never pays itself, and the
// outcome is recorded: the status, the PAYMENT-REQUIRED of a 402, the
// PAYMENT-RESPONSE of a paid answer, and the body.
type Forward struct {
	Payment         string
	Status          int
	PaymentRequired string
	PaymentResponse string
	Body            []byte
}

type forwardKey struct{}

// ForwardPayment returns a context under which calls send f.Payment and
// record their outcome in f (one call per Forward).
func ForwardPayment(ctx context.Context, f *Forward) context.Context {
	return context.WithValue(ctx, forwardKey{}, f)
}

// Display is the amount in units: "0.01 USDC" for USDC.
func (r Receipt) Display() string {
	if n, ok := x402.NetworkByName(r.Network); ok && r.Asset == n.USDC.String() {
		return x402.FormatAmount(r.Amount, x402.USDCDecimals) + " USDC"
	}
	return fmt.Sprintf("%d atomic units of %s", r.Amount, r.Asset)
}

// Receipts collects the payments made under one context.
type Receipts struct {
	mu   sync.Mutex
	list []Receipt
}

// All returns the receipts so far.
func (r *Receipts) All() []Receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Receipt(nil), r.list...)
}

func (r *Receipts) add(x Receipt) {
	r.mu.Lock()
	r.list = append(r.list, x)
	r.mu.Unlock()
}

type receiptsKey struct{}

// RecordPayments returns a context under which every payment the client
// makes is added to rec, so a caller learns what each call cost.
func RecordPayments(ctx context.Context, rec *Receipts) context.Context {
	return context.WithValue(ctx, receiptsKey{}, rec)
}

// WithPayer makes the client pay 402 answers (see Payer). An API key, when
// set too, is sent instead and no payment is made.
func WithPayer(p Payer) Option {
	return func(c *Client) {
		c.payer = &payer{Payer: p, decimals: map[solana.PublicKey]mintInfo{}}
		if p.RPCURL != "" {
			c.payer.rpc = rpc.New(p.RPCURL)
		}
	}
}

// ErrPaymentRefused wraps why a 402 was not paid (price above MaxAmount,
// Approve said no, nothing payable offered).
var ErrPaymentRefused = errors.New("attestd client: payment not made")

type payer struct {
	Payer
	rpc      *rpc.Client
	mu       sync.Mutex
	decimals map[solana.PublicKey]mintInfo
}

type mintInfo struct {
	decimals uint8
	program  solana.PublicKey
}

// pay builds the PAYMENT-SIGNATURE answering a 402's header.
func (p *payer) pay(ctx context.Context, h http.Header) (string, x402.Requirements, error) {
	var zero x402.Requirements
	pr, err := x402.DecodePaymentRequired(h.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return "", zero, fmt.Errorf("%w: the 402 has no readable PAYMENT-REQUIRED header: %v", ErrPaymentRefused, err)
	}
	var q x402.Requirements
	found := false
	var cheapest uint64
	for _, a := range pr.Accepts {
		n, known := x402.NetworkByName(a.Network)
		amount, err := a.AmountUnits()
		if a.Scheme != x402.SchemeExact || !known || n.CAIP2 != a.Network || a.Extra == nil || a.Extra.FeePayer == "" || err != nil {
			continue
		}
		if amount > p.MaxAmount {
			if cheapest == 0 || amount < cheapest {
				cheapest = amount
			}
			continue
		}
		q, found = a, true
		break
	}
	if !found {
		if cheapest > 0 {
			return "", zero, fmt.Errorf("%w: the price is %d atomic units, above the payer's maximum of %d", ErrPaymentRefused, cheapest, p.MaxAmount)
		}
		return "", zero, fmt.Errorf("%w: the 402 offers no exact payment on a known Solana network", ErrPaymentRefused)
	}
	if p.Approve != nil {
		if err := p.Approve(ctx, q); err != nil {
			return "", zero, fmt.Errorf("%w: %w", ErrPaymentRefused, err)
		}
	}
	mint, err := solana.PublicKeyFromBase58(q.Asset)
	if err != nil {
		return "", zero, fmt.Errorf("%w: asset %q: %v", ErrPaymentRefused, q.Asset, err)
	}
	mi, err := p.mint(ctx, mint)
	if err != nil {
		return "", zero, err
	}
	var bh solana.Hash
	if q.Extra.RecentBlockhash != "" {
		bh, err = solana.HashFromBase58(q.Extra.RecentBlockhash)
	}
	if q.Extra.RecentBlockhash == "" || err != nil {
		if p.rpc == nil {
			return "", zero, fmt.Errorf("%w: the 402 gives no recent blockhash; set Payer.RPCURL", ErrPaymentRefused)
		}
		out, err := p.rpc.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
		if err != nil {
			return "", zero, fmt.Errorf("attestd client: recent blockhash: %w", err)
		}
		bh = out.Value.Blockhash
	}
	wire, err := x402.BuildExact(q, x402.Payment{Payer: p.Key, Blockhash: bh, Decimals: mi.decimals, TokenProgram: mi.program})
	if err != nil {
		return "", zero, err
	}
	hdr, err := x402.EncodeHeader(x402.NewPaymentPayload(pr.Resource, q, wire))
	return hdr, q, err
}

// mint learns an asset's decimals and token program: USDC is known; other
// mints are read through the RPC once.
func (p *payer) mint(ctx context.Context, mint solana.PublicKey) (mintInfo, error) {
	if mint == x402.Mainnet.USDC || mint == x402.Devnet.USDC {
		return mintInfo{decimals: x402.USDCDecimals, program: solana.TokenProgramID}, nil
	}
	p.mu.Lock()
	mi, ok := p.decimals[mint]
	p.mu.Unlock()
	if ok {
		return mi, nil
	}
	if p.rpc == nil {
		return mi, fmt.Errorf("%w: asset %s is not USDC; set Payer.RPCURL to read its decimals", ErrPaymentRefused, mint)
	}
	acc, err := p.rpc.GetAccountInfoWithOpts(ctx, mint, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil || acc == nil || acc.Value == nil {
		return mi, fmt.Errorf("attestd client: read mint %s: %v", mint, err)
	}
	data := acc.Value.Data.GetBinary()
	if len(data) < 82 || (acc.Value.Owner != solana.TokenProgramID && acc.Value.Owner != solana.Token2022ProgramID) {
		return mi, fmt.Errorf("%w: %s is not a token mint", ErrPaymentRefused, mint)
	}
	mi = mintInfo{decimals: data[44], program: acc.Value.Owner}
	p.mu.Lock()
	p.decimals[mint] = mi
	p.mu.Unlock()
	return mi, nil
}

// Forwarding reports whether ctx carries a Forward.
func Forwarding(ctx context.Context) bool {
	_, ok := ctx.Value(forwardKey{}).(*Forward)
	return ok
}
