package inprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/valyala/fasthttp"
)

// MaxRequestBody bounds the body of one request sent through a Transport.
const MaxRequestBody = 1 << 20

// ErrNoPeer is returned for a request whose context names no client
// address (see WithPeer): a request is never made as nobody.
var ErrNoPeer = errors.New("inprocess: the request's context names no client address")

type peerKey struct{}

// WithPeer returns a context under which requests are made for the
// client at addr.
func WithPeer(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, peerKey{}, addr)
}

// Peer is the client address ctx carries (see WithPeer).
func Peer(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(peerKey{}).(netip.Addr)
	return a, ok && a.IsValid()
}

// innerKey marks a fasthttp request made by a Transport; its value is
// the context of the http.Request it stands for.
type innerKey struct{}

// Is reports whether rctx is a request made by a Transport, not read off
// a connection. Only this package sets the mark, so a client cannot.
func Is(rctx *fasthttp.RequestCtx) bool {
	_, ok := rctx.UserValue(innerKey{}).(context.Context)
	return ok
}

// Context is the context a Transport's request was made under (its
// deadline, cancellation and values), or nil for a request read off a
// connection.
func Context(rctx *fasthttp.RequestCtx) context.Context {
	ctx, _ := rctx.UserValue(innerKey{}).(context.Context)
	return ctx
}

// Transport answers each request with Handler, in memory. The handler
// runs on a goroutine of its own: when the request's context ends first,
// RoundTrip returns its error and the handler's answer is dropped.
type Transport struct {
	Handler fasthttp.RequestHandler
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	peer, ok := Peer(ctx)
	if !ok {
		closeBody(r)
		return nil, ErrNoPeer
	}
	rctx, err := newRequestCtx(r, peer)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		t.Handler(rctx)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("inprocess: %s %s: %w", r.Method, r.URL.Path, ctx.Err())
	}
	if panicked != nil {
		return nil, fmt.Errorf("inprocess: %s %s: the handler panicked", r.Method, r.URL.Path)
	}
	return response(r, &rctx.Response)
}

// newRequestCtx makes the fasthttp request r stands for, from peer.
func newRequestCtx(r *http.Request, peer netip.Addr) (*fasthttp.RequestCtx, error) {
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	req.Header.SetHost(host)
	req.URI().SetHost(host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
		closeBody(r)
		if err != nil {
			return nil, fmt.Errorf("inprocess: %s %s: read body: %w", r.Method, r.URL.Path, err)
		}
		if len(b) > MaxRequestBody {
			return nil, fmt.Errorf("inprocess: %s %s: body larger than %d bytes", r.Method, r.URL.Path, MaxRequestBody)
		}
		req.SetBodyRaw(b)
	}
	rctx := new(fasthttp.RequestCtx)
	rctx.Init(&req, net.TCPAddrFromAddrPort(netip.AddrPortFrom(peer, 0)), nil)
	rctx.SetUserValue(innerKey{}, r.Context())
	return rctx, nil
}

// response copies the handler's answer into an http.Response.
func response(r *http.Request, res *fasthttp.Response) (*http.Response, error) {
	// Body reads a streamed body whole (a handler may stream one).
	body := bytes.Clone(res.Body())
	if err := res.CloseBodyStream(); err != nil {
		return nil, fmt.Errorf("inprocess: %s %s: close body stream: %w", r.Method, r.URL.Path, err)
	}
	out := &http.Response{
		Status:        strconv.Itoa(res.StatusCode()) + " " + http.StatusText(res.StatusCode()),
		StatusCode:    res.StatusCode(),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header),
		ContentLength: int64(len(body)),
		Request:       r,
	}
	if r.Method == http.MethodHead {
		body = nil
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	res.Header.VisitAll(func(k, v []byte) {
		out.Header.Add(string(k), string(v))
	})
	out.Header.Del("Content-Length")
	return out, nil
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}
