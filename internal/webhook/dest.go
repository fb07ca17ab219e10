package webhook

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/webhook/egress"
)

// destTTL is how long a host's resolved destination is kept: DNS changes
// reach the caps within it.
const destTTL = 30 * time.Second

// dest is where the requests to one host go: the address they connect to
// (pinned at dial time, egress.WithAddr) and the key of that address's
// per-host caps. The key is the canonical address (IPv4 for an
// IPv4-mapped, NAT64 or 6to4 address), so every spelling of one receiver
// (127.0.0.1, localhost, [::ffff:127.0.0.1], any DNS name pointing at it)
// shares one budget.
type dest struct {
	key  string
	addr netip.Addr // invalid: not resolved; the dial resolves, the key is the name
}

// dests resolves hosts to their dest, keeping each for destTTL.
type dests struct {
	resolver egress.Resolver
	policy   egress.Policy
	now      func() time.Time
	mu       sync.Mutex
	m        map[string]destEntry
}

type destEntry struct {
	d       dest
	expires time.Time
}

func newDests(r egress.Resolver, p egress.Policy) *dests {
	if r == nil {
		r = net.DefaultResolver
	}
	return &dests{resolver: r, policy: p, now: time.Now, m: map[string]destEntry{}}
}

// of is the destination of host (as hostOf gives it). An address literal
// is its own; a name is the first of its addresses the policy allows (in
// netip order: IPv4 before IPv6), which every request to the name then
// connects to until the entry expires. A name that does not resolve, or
// has no allowed address, keys on the name (its requests fail at dial).
func (ds *dests) of(ctx context.Context, host string) dest {
	if host == "" {
		return dest{}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return dest{key: egress.Unwrap(a).String(), addr: a.WithZone("")}
	}
	now := ds.now()
	ds.mu.Lock()
	e, ok := ds.m[host]
	ds.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.d
	}
	d := ds.resolve(ctx, host)
	ds.mu.Lock()
	if len(ds.m) >= maxDests {
		for k, old := range ds.m {
			if !now.Before(old.expires) {
				delete(ds.m, k)
			}
		}
		if len(ds.m) >= maxDests {
			clear(ds.m)
		}
	}
	ds.m[host] = destEntry{d: d, expires: now.Add(destTTL)}
	ds.mu.Unlock()
	return d
}

// maxDests bounds the hosts kept at once.
const maxDests = 10_000

func (ds *dests) resolve(ctx context.Context, host string) dest {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := ds.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return dest{key: "name:" + host}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return egress.Unwrap(a).Compare(egress.Unwrap(b)) })
	for _, a := range addrs {
		if ds.policy.Check(a) == nil {
			return dest{key: egress.Unwrap(a).String(), addr: a.WithZone("")}
		}
	}
	return dest{key: "name:" + host}
}
