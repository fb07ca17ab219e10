package app

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"
)

// ListenOptions say how a node listens and how it stops.
type ListenOptions struct {
	// Drain is how long the node keeps serving after its context ends,
	// with /health answering 503 "draining" (so load balancers that probe
	// it stop sending new requests) and every answer closing its
	// connection (so proxies holding keep-alive connections reconnect to
	// other nodes). Zero: no drain.
	Drain time.Duration
	// SkipDrain (nil: none) ends the drain early when it closes (a second
	// SIGTERM or SIGINT).
	SkipDrain <-chan struct{}
	// Grace bounds the graceful shutdown after the drain: requests in
	// flight finish within it.
	Grace time.Duration
	// ReusePort binds the listener with SO_REUSEPORT, so a replacement
	// can bind the same address while this node drains.
	ReusePort bool
	// Listener (nil: bind addr) is a listener already bound with Bind.
	Listener net.Listener
	// Listening (nil: none) is called once the listener is bound, before
	// the first request is accepted: the place to say "serving".
	Listening func(addr net.Addr)
}

// Draining reports whether the node is draining (its context ended; it
// still serves until the drain is over).
func (a *API) Draining() bool { return a.draining.Load() }

// drainingSeconds is how long the node has been draining, 0 when it is not.
func (a *API) drainingSeconds() float64 {
	if !a.draining.Load() {
		return 0
	}
	return time.Since(time.Unix(0, a.drainStart.Load())).Seconds()
}

// ListenWith serves on addr until ctx ends, drains for opt.Drain (or
// until opt.SkipDrain closes), then shuts down within opt.Grace.
func (a *API) ListenWith(ctx context.Context, addr string, opt ListenOptions) error {
	ln := opt.Listener
	if ln == nil {
		var err error
		if ln, err = Bind(addr, opt.ReusePort); err != nil {
			return err
		}
	}
	if opt.Listening != nil {
		opt.Listening(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := a.drain(opt.Drain, opt.SkipDrain, errc); err != nil {
		return err
	}
	a.log.Info("shutting down", "grace", opt.Grace.String())
	if err := a.fiber.ShutdownWithTimeout(opt.Grace); err != nil {
		return err
	}
	return <-errc
}

// drain marks the node draining and waits d, or until skip closes; an
// error of the server (errc) ends it.
func (a *API) drain(d time.Duration, skip <-chan struct{}, errc <-chan error) error {
	if d <= 0 {
		return nil
	}
	a.drainStart.Store(time.Now().UnixNano())
	a.draining.Store(true)
	a.log.Info("draining: /health answers 503 while requests are still served", "drain", d.String())
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	how := "drain time over"
	select {
	case <-t.C:
	case <-skip:
		how = "a second signal ended it early"
	case err := <-errc:
		return err
	}
	a.log.Info("drain over", "after", time.Since(start).Round(time.Millisecond).String(), "why", how)
	return nil
}

// Bind binds addr for ListenOptions.Listener, with SO_REUSEPORT when
// reusePort is set (a replacement may then bind the same address while
// this node drains).
func Bind(addr string, reusePort bool) (net.Listener, error) {
	var lc net.ListenConfig
	if reusePort {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) { serr = setReusePort(fd) }); err != nil {
				return err
			}
			return serr
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}
