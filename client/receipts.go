package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
)

// ErrBadReceipt: a paid answer's receipt does not verify under the
// service's published key, or does not describe the answer it came with.
var ErrBadReceipt = errors.New("attestd client: receipt does not verify")

// receiptKeys caches the service's receipt key set (/.well-known/jwks.json
// at the API's origin).
type receiptKeys struct {
	mu   sync.Mutex
	keys *receipt.JWKS
}

// JWKSURL is where the service publishes its receipt key: the API's
// origin, /.well-known/jwks.json.
func (c *Client) JWKSURL() string {
	return strings.TrimSuffix(c.base, APIPrefix) + "/.well-known/jwks.json"
}

// ReceiptKeys fetches (once) the key set that signs the service's receipts.
func (c *Client) ReceiptKeys(ctx context.Context) (receipt.JWKS, error) {
	c.rkeys.mu.Lock()
	defer c.rkeys.mu.Unlock()
	if c.rkeys.keys != nil {
		return *c.rkeys.keys, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.JWKSURL(), nil)
	if err != nil {
		return receipt.JWKS{}, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return receipt.JWKS{}, fmt.Errorf("attestd client: receipt keys: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return receipt.JWKS{}, fmt.Errorf("attestd client: receipt keys: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return receipt.JWKS{}, fmt.Errorf("attestd client: receipt keys: %s answered %d", c.JWKSURL(), res.StatusCode)
	}
	var keys receipt.JWKS
	if err := json.Unmarshal(b, &keys); err != nil || len(keys.Keys) == 0 {
		return receipt.JWKS{}, fmt.Errorf("attestd client: receipt keys: %s is not a key set", c.JWKSURL())
	}
	c.rkeys.keys = &keys
	return keys, nil
}

// VerifyReceipt checks a receipt (compact JWS) under the service's
// published key and returns what it says.
func (c *Client) VerifyReceipt(ctx context.Context, jws string) (receipt.Payload, error) {
	keys, err := c.ReceiptKeys(ctx)
	if err != nil {
		return receipt.Payload{}, err
	}
	p, err := receipt.Verify(jws, keys)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrBadReceipt, err)
	}
	return p, nil
}

// ReceiptOf extracts the signed receipt of a settlement result ("" when
// it carries none).
func ReceiptOf(sr *x402.SettleResponse) string {
	if sr == nil {
		return ""
	}
	raw, ok := sr.Extensions[receipt.Extension]
	if !ok {
		return ""
	}
	var e receipt.ExtensionInfo
	if json.Unmarshal(raw, &e) != nil || e.Info.Receipt.Format != receipt.Format {
		return ""
	}
	return e.Info.Receipt.Signature
}

// checkReceipt verifies the receipt of a paid answer: signed by the
// service, for this transaction, this resource and these answer bytes.
func (c *Client) checkReceipt(ctx context.Context, r request, sr *x402.SettleResponse, body []byte) (receipt.Payload, error) {
	jws := ReceiptOf(sr)
	p, err := c.VerifyReceipt(ctx, jws)
	if err != nil {
		return p, err
	}
	u, uerr := url.Parse(p.ResourceURL)
	switch {
	case p.Transaction != sr.Transaction:
		return p, fmt.Errorf("%w: it is for transaction %s, the payment is %s", ErrBadReceipt, p.Transaction, sr.Transaction)
	case p.ResponseDigest != receipt.Digest(body):
		return p, fmt.Errorf("%w: its responseDigest is not the SHA-256 of the answer received", ErrBadReceipt)
	case uerr != nil || !strings.HasSuffix(u.EscapedPath(), APIPrefix+r.path):
		return p, fmt.Errorf("%w: it is for %s, the request was %s", ErrBadReceipt, p.ResourceURL, r.path)
	}
	return p, nil
}
