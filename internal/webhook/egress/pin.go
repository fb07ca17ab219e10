package egress

import (
	"context"
	"net/netip"
)

type pinKey struct{}

// WithAddr asks the client to connect a request made with the returned
// context to a, whatever its URL's host resolves to then: the address the
// caller took its turn at a per-destination cap for. The policy still
// checks a at connect time; TLS and the Host header keep the URL's name.
// An invalid a pins nothing.
func WithAddr(ctx context.Context, a netip.Addr) context.Context {
	if !a.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, pinKey{}, a)
}

// pinned is the address WithAddr put in ctx.
func pinned(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(pinKey{}).(netip.Addr)
	return a, ok
}
