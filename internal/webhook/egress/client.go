package egress

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Options configure a Client.
type Options struct {
	Policy Policy
	// Timeout bounds one request, from dial to the end of the headers
	// (default 10 s); the caller bounds reading the body.
	Timeout time.Duration
	// Resolver resolves host names at dial time (nil: the system's).
	Resolver *net.Resolver
	// MaxConnsPerHost bounds connections to one host (default 16).
	MaxConnsPerHost int
	// TLS adds to the client's TLS configuration (tests: a root CA).
	TLS *tls.Config
}

// Client is the guarded HTTP client.
type Client struct {
	// HTTP never follows redirects, never uses a proxy and dials only
	// addresses the policy allows. Its CloseIdleConnections does nothing,
	// so one failing endpoint does not close every endpoint's idle
	// connections (go-retryablehttp calls it after each failure); use
	// Client.CloseIdle.
	HTTP      *http.Client
	transport *http.Transport
}

// NewClient returns a guarded client.
func NewClient(opt Options) *Client {
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.MaxConnsPerHost <= 0 {
		opt.MaxConnsPerHost = 16
	}
	policy := opt.Policy
	dialer := &net.Dialer{
		Timeout:   min(5*time.Second, opt.Timeout),
		KeepAlive: 30 * time.Second,
		Resolver:  opt.Resolver,
		// ControlContext runs for every address the dialer tries, after
		// resolution, just before connect: the IP here is the one used.
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return &BlockedError{Reason: "an unparsable dial address"}
			}
			a, err := netip.ParseAddr(host)
			if err != nil {
				return &BlockedError{Reason: "an unparsable dial address"}
			}
			return policy.Check(a)
		},
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if opt.TLS != nil {
		tlsConf = opt.TLS.Clone()
		if tlsConf.MinVersion < tls.VersionTLS12 {
			tlsConf.MinVersion = tls.VersionTLS12
		}
	}
	t := &http.Transport{
		Proxy:                  nil, // a proxy would make the dialer check the proxy's address instead
		DialContext:            dialPinned(dialer),
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    min(5*time.Second, opt.Timeout),
		ResponseHeaderTimeout:  opt.Timeout,
		DisableCompression:     true, // never inflate a receiver's answer
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    opt.MaxConnsPerHost,
		MaxConnsPerHost:        opt.MaxConnsPerHost,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: 16 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &Client{
		HTTP: &http.Client{
			Transport: noCloseIdle{t},
			Timeout:   opt.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // a 3xx is an answer, not a place to go
			},
		},
		transport: t,
	}
}

// dialPinned dials the address a request's context pins (WithAddr), at
// the port asked for, instead of what the host resolves to now.
func dialPinned(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if a, ok := pinned(ctx); ok {
			if _, port, err := net.SplitHostPort(address); err == nil {
				address = net.JoinHostPort(a.String(), port)
			}
		}
		return d.DialContext(ctx, network, address)
	}
}

// CloseIdle closes idle connections (at shutdown).
func (c *Client) CloseIdle() { c.transport.CloseIdleConnections() }

// noCloseIdle hides the transport's CloseIdleConnections from http.Client.
type noCloseIdle struct{ t *http.Transport }

func (n noCloseIdle) RoundTrip(r *http.Request) (*http.Response, error) { return n.t.RoundTrip(r) }
