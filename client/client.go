package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/x402"
)

// Defaults of a Client.
const (
	// DefaultBaseURL is a local attestd (cmd `attestd serve` or `make run`).
	DefaultBaseURL = "http://127.0.0.1:8080"
	// DefaultTimeout bounds every call whose context has no earlier
	// deadline. It covers a paid call: the 402, the payment, and the paid
	// request, which the server answers only once the payment settles (up
	// to ATTESTD_X402_SETTLE_TIMEOUT, x402.DefaultSettleTimeout by
	// default), with 15 s to spare. Against a server with a longer settle
	// timeout, use WithTimeout.
	DefaultTimeout = x402.DefaultSettleTimeout + 15*time.Second
	// APIPrefix is the path prefix of every route.
	APIPrefix = "/api/v1"
	// APIKeyHeader carries the API key.
	APIKeyHeader = "x-api-key"
	// maxBody bounds a response body (a full history of 1000 records is ~0.6 MB).
	maxBody = 32 << 20
)

// Client calls one attestd service. It is safe for concurrent use.
type Client struct {
	base      string // scheme://host[:port][/path]/api/v1, no trailing slash
	site      string // scheme://host[:port]: where the log's origin path is
	apiKey    string
	http      *http.Client
	timeout   time.Duration
	userAgent string
	payer     *payer
	rkeys     receiptKeys
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sets the API key sent as x-api-key (needed by the premium routes).
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = strings.TrimSpace(key) } }

// WithHTTPClient replaces the HTTP client (transport, proxies, TLS).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithTimeout bounds every call (DefaultTimeout by default). A context with
// an earlier deadline still wins. Zero or less keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the service at baseURL: its root
// (http://host:8080) or its API base (http://host:8080/api/v1); the /api/v1
// prefix is added when the path does not already end with it. An empty
// baseURL means DefaultBaseURL.
func New(baseURL string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("attestd client: parse base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("attestd client: base URL %q must be an absolute http or https URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("attestd client: base URL %q must not have a query or fragment", baseURL)
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, APIPrefix) {
		path += APIPrefix
	}
	u.Path, u.RawPath = path, ""
	c := &Client{
		base:      u.String(),
		site:      u.Scheme + "://" + u.Host,
		http:      &http.Client{},
		timeout:   DefaultTimeout,
		userAgent: "attestd-client-go/" + buildinfo.Version,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// BaseURL is the API base every path is appended to (ends in /api/v1).
func (c *Client) BaseURL() string { return c.base }

// CanPay reports whether the client pays 402 answers (WithPayer, no key).
func (c *Client) CanPay() bool { return c.payer != nil && c.apiKey == "" }

// receipt records a paid call for RecordPayments, with its signed
// receipt verified (Receipt.Signed, Claims, ReceiptErr).
func (c *Client) receipt(ctx context.Context, r request, q x402.Requirements, h http.Header, body []byte) {
	rec, _ := ctx.Value(receiptsKey{}).(*Receipts)
	if rec == nil {
		return
	}
	amount, _ := q.AmountUnits()
	x := Receipt{Method: r.method, Path: r.path, Amount: amount, Asset: q.Asset, Network: q.Network, Payer: c.payer.Key.PublicKey().String()}
	if sr, err := x402.DecodeSettleResponse(h.Get(x402.HeaderPaymentResponse)); err == nil {
		x.Transaction = sr.Transaction
		if x.Signed = ReceiptOf(sr); x.Signed != "" {
			claims, err := c.checkReceipt(ctx, r, sr, body)
			if err != nil {
				x.ReceiptErr = err
			} else {
				x.Claims = &claims
			}
		}
	}
	rec.add(x)
}

// HasAPIKey reports whether calls carry an API key.
func (c *Client) HasAPIKey() bool { return c.apiKey != "" }

// request is one call.
type request struct {
	method string
	path   string // below the API base, escaped
	query  url.Values
	body   any
	// payment is a PAYMENT-SIGNATURE to send.
	payment string
	// accept is the Accept header (application/json when empty).
	accept string
	// noCache asks caches on the way to revalidate (Cache-Control: no-cache).
	noCache bool
	// site: path is below the host's root, not the API base (the log's
	// checkpoint and tiles, at the log's origin).
	site bool
}

// do sends r and decodes a 2xx body into out. Any other status is an
// *APIError; a transport or decoding failure is wrapped with the route.
func (c *Client) do(ctx context.Context, r request, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	fwd, _ := ctx.Value(forwardKey{}).(*Forward)
	if fwd != nil {
		r.payment = fwd.Payment
	}
	status, header, body, err := c.roundTrip(ctx, r)
	if err != nil {
		return err
	}
	if fwd != nil {
		// A payment made elsewhere (an MCP caller's): sent as given,
		// never replaced by one of ours; the caller reads the outcome.
		fwd.Status, fwd.PaymentRequired, fwd.PaymentResponse = status, header.Get(x402.HeaderPaymentRequired), header.Get(x402.HeaderPaymentResponse)
		fwd.Body = body
		if status < 200 || status > 299 {
			return newAPIError(r.method, r.path, status, header, body)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("attestd client: %s %s: decode %d response: %w", r.method, r.path, status, err)
		}
		return nil
	}
	if status == http.StatusPaymentRequired && c.payer != nil && c.apiKey == "" && r.payment == "" {
		hdr, q, perr := c.payer.pay(ctx, header)
		if perr != nil {
			e := newAPIError(r.method, r.path, status, header, body)
			return fmt.Errorf("%w (%w)", e, perr)
		}
		r.payment = hdr
		if status, header, body, err = c.roundTrip(ctx, r); err != nil {
			return err
		}
		if status >= 200 && status <= 299 {
			c.receipt(ctx, r, q, header, body)
		}
	}
	if status < 200 || status > 299 {
		return newAPIError(r.method, r.path, status, header, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("attestd client: %s %s: decode %d response: %w", r.method, r.path, status, err)
	}
	return nil
}

// roundTrip sends r and reads the whole (bounded) response body.
func (c *Client) roundTrip(ctx context.Context, r request) (int, http.Header, []byte, error) {
	target := c.base + r.path
	if r.site {
		target = c.site + r.path
	}
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var rd io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("attestd client: %s %s: encode body: %w", r.method, r.path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("attestd client: %s %s: %w", r.method, r.path, err)
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if r.noCache {
		req.Header.Set("Cache-Control", "no-cache")
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.apiKey != "" && !Forwarding(ctx) {
		req.Header.Set(APIKeyHeader, c.apiKey)
	}
	if r.payment != "" {
		req.Header.Set(x402.HeaderPaymentSignature, r.payment)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("attestd client: %s %s: %w", r.method, r.path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("attestd client: %s %s: read %d response: %w", r.method, r.path, res.StatusCode, err)
	}
	if len(body) > maxBody {
		return 0, nil, nil, fmt.Errorf("attestd client: %s %s: response larger than %d bytes", r.method, r.path, maxBody)
	}
	return res.StatusCode, res.Header, body, nil
}

// pathID escapes one path segment, refusing an empty one (which would
// address a different route).
func pathID(name, id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("attestd client: %s must not be empty", name)
	}
	return url.PathEscape(id), nil
}

// ErrEmptyIDs is returned by BulkVerify without ids.
var ErrEmptyIDs = errors.New("attestd client: bulk verify needs at least one id")
