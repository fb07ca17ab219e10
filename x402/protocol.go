package x402

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gagliardetto/solana-go"
)

// Header names (x402 v2 HTTP transport, and v1's).
const (
	HeaderPaymentRequired   = "PAYMENT-REQUIRED"
	HeaderPaymentSignature  = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse   = "PAYMENT-RESPONSE"
	HeaderPaymentV1         = "X-PAYMENT"
	HeaderPaymentResponseV1 = "X-PAYMENT-RESPONSE"
)

// SchemeExact is the only scheme this package speaks.
const SchemeExact = "exact"

// Network is a Solana cluster as x402 names it: a CAIP-2 id on the v2
// wire and a short name in v1.
type Network struct {
	Name  string // v1 name and configuration value: solana, solana-devnet
	CAIP2 string // v2 wire id
	USDC  solana.PublicKey
}

// The Solana networks x402 clients know.
var (
	Mainnet = Network{Name: "solana", CAIP2: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
		USDC: solana.MustPublicKeyFromBase58("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")}
	Devnet = Network{Name: "solana-devnet", CAIP2: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
		USDC: solana.MustPublicKeyFromBase58("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU")}
)

// USDCDecimals is the decimals of USDC mints.
const USDCDecimals = 6

// NetworkByName finds a network by its v1 name or its CAIP-2 id.
func NetworkByName(s string) (Network, bool) {
	for _, n := range []Network{Mainnet, Devnet} {
		if s == n.Name || s == n.CAIP2 {
			return n, true
		}
	}
	return Network{}, false
}

// ResourceInfo describes what is paid for (v2).
type ResourceInfo struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Extra is the SVM `exact` scheme's extra member of the requirements.
type Extra struct {
	// FeePayer sponsors the transaction fee and is its first signer.
	FeePayer string `json:"feePayer"`
	// Memo, when set, is the data of the one Memo instruction required.
	Memo string `json:"memo,omitempty"`
	// RecentBlockhash and LastValidBlockHeight are a hint so the payer
	// needs no RPC round trip of its own.
	RecentBlockhash      string `json:"recentBlockhash,omitempty"`
	LastValidBlockHeight string `json:"lastValidBlockHeight,omitempty"`
}

// Requirements are one way to pay (v2 PaymentRequirements).
type Requirements struct {
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	Amount            string `json:"amount"` // atomic units of Asset
	Asset             string `json:"asset"`  // the mint
	PayTo             string `json:"payTo"`  // the owner wallet, not its token account
	MaxTimeoutSeconds int    `json:"maxTimeoutSeconds"`
	Extra             *Extra `json:"extra,omitempty"`
}

// PaymentRequired is the 402 challenge (v2), sent base64 in PAYMENT-REQUIRED.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Resource    ResourceInfo   `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
	// Extensions carry optional capabilities by name (bazaar discovery).
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ExactPayload is the scheme-specific payload: a partially signed
// transaction (the payer's signature present, the fee payer's slot empty).
type ExactPayload struct {
	Transaction string `json:"transaction"` // base64 wire transaction
}

// PaymentPayload is what a payer sends in PAYMENT-SIGNATURE (v2).
type PaymentPayload struct {
	X402Version int           `json:"x402Version"`
	Resource    *ResourceInfo `json:"resource,omitempty"`
	Accepted    Requirements  `json:"accepted"`
	Payload     ExactPayload  `json:"payload"`
	// Extensions carry optional capabilities by name (e.g.
	// payment-identifier); unknown ones are ignored.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// RequirementsV1 are v1 PaymentRequirements.
type RequirementsV1 struct {
	Scheme            string  `json:"scheme"`
	Network           string  `json:"network"`
	MaxAmountRequired string  `json:"maxAmountRequired"`
	Resource          string  `json:"resource"`
	Description       string  `json:"description"`
	MimeType          string  `json:"mimeType"`
	OutputSchema      *string `json:"outputSchema"`
	PayTo             string  `json:"payTo"`
	MaxTimeoutSeconds int     `json:"maxTimeoutSeconds"`
	Asset             string  `json:"asset"`
	Extra             *Extra  `json:"extra,omitempty"`
}

// PaymentRequiredV1 is a v1 402 body.
type PaymentRequiredV1 struct {
	X402Version int              `json:"x402Version"`
	Error       string           `json:"error,omitempty"`
	Accepts     []RequirementsV1 `json:"accepts"`
}

// PaymentPayloadV1 is what a v1 payer sends in X-PAYMENT.
type PaymentPayloadV1 struct {
	X402Version int          `json:"x402Version"`
	Scheme      string       `json:"scheme"`
	Network     string       `json:"network"`
	Payload     ExactPayload `json:"payload"`
}

// SettleResponse is the settlement result, sent base64 in PAYMENT-RESPONSE
// (X-PAYMENT-RESPONSE in v1).
type SettleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	Transaction string `json:"transaction"` // base58 signature; "" on failure
	Network     string `json:"network"`
	Amount      string `json:"amount,omitempty"`
	// Extensions carry optional results by name (offer-receipt: the
	// signed receipt).
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// V1 converts v2 requirements to their v1 form for resource r.
func (q Requirements) V1(r ResourceInfo) RequirementsV1 {
	n, _ := NetworkByName(q.Network)
	return RequirementsV1{Scheme: q.Scheme, Network: n.Name, MaxAmountRequired: q.Amount, Resource: r.URL,
		Description: r.Description, MimeType: r.MimeType, PayTo: q.PayTo, MaxTimeoutSeconds: q.MaxTimeoutSeconds,
		Asset: q.Asset, Extra: q.Extra}
}

// Requirements converts v1 requirements to v2.
func (q RequirementsV1) Requirements() Requirements {
	network := q.Network
	if n, ok := NetworkByName(q.Network); ok {
		network = n.CAIP2
	}
	return Requirements{Scheme: q.Scheme, Network: network, Amount: q.MaxAmountRequired, Asset: q.Asset, PayTo: q.PayTo,
		MaxTimeoutSeconds: q.MaxTimeoutSeconds, Extra: q.Extra}
}

// AmountUnits parses the atomic amount.
func (q Requirements) AmountUnits() (uint64, error) {
	n, err := strconv.ParseUint(q.Amount, 10, 64)
	if err != nil || n == 0 || q.Amount[0] == '0' {
		return 0, fmt.Errorf("x402: amount %q is not a positive whole number of atomic units", q.Amount)
	}
	return n, nil
}

// Match reports whether a payer's echo of requirements names the same
// payment as ours: scheme, network, amount, asset, payTo and fee payer.
// Hints (blockhash) and timeouts are not compared.
func (q Requirements) Match(echo Requirements) bool {
	if q.Scheme != echo.Scheme || q.Network != echo.Network || q.Amount != echo.Amount || q.Asset != echo.Asset ||
		q.PayTo != echo.PayTo {
		return false
	}
	if q.Extra == nil || echo.Extra == nil {
		return q.Extra == nil && echo.Extra == nil
	}
	return q.Extra.FeePayer == echo.Extra.FeePayer && q.Extra.Memo == echo.Extra.Memo
}

// FormatAmount renders atomic units with decimals, e.g. 10000 at 6 -> "0.01".
func FormatAmount(units uint64, decimals int) string {
	s := strconv.FormatUint(units, 10)
	if decimals <= 0 {
		return s
	}
	for len(s) <= decimals {
		s = "0" + s
	}
	whole, frac := s[:len(s)-decimals], s[len(s)-decimals:]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// ParseAmount reads a decimal amount of tokens ("0.01", "2", "1.5") into
// atomic units at decimals; it refuses more fractional digits than
// decimals, negative numbers, zero and overflow.
func ParseAmount(s string, decimals int) (uint64, error) {
	if s == "" || len(s) > 40 {
		return 0, errors.New("want a decimal amount such as 0.01")
	}
	whole, frac, dot := s, "", false
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if dot {
				return 0, fmt.Errorf("%q is not a decimal amount", s)
			}
			whole, frac, dot = s[:i], s[i+1:], true
		}
	}
	if whole == "" || (dot && frac == "") {
		return 0, fmt.Errorf("%q is not a decimal amount", s)
	}
	if len(frac) > decimals {
		return 0, fmt.Errorf("%q has more than %d decimal places", s, decimals)
	}
	for len(frac) < decimals {
		frac += "0"
	}
	digits := whole + frac
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal amount", s)
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if n == 0 {
		return 0, errors.New("the amount must be more than zero")
	}
	return n, nil
}
