package webhook

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/webhook/egress"
)

// fakeResolver answers names from a table and counts its lookups.
type fakeResolver struct {
	names   map[string][]string
	lookups int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.lookups++
	as, ok := f.names[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, len(as))
	for i, a := range as {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

// TestDestinationIsAnAddress: every spelling of one receiver, and every
// name pointing at it, keys one cap, and the request connects to the
// address the key names.
func TestDestinationIsAnAddress(t *testing.T) {
	r := &fakeResolver{names: map[string][]string{
		"localhost":          {"::1", "127.0.0.1"},
		"victim.example":     {"2001:db8::1", "1.1.1.1"},
		"mapped.example":     {"::ffff:1.1.1.1"},
		"private-first.test": {"10.0.0.1", "1.1.1.1"},
		"only-private.test":  {"10.0.0.1"},
	}}
	loopback := newDests(r, egress.Policy{AllowLoopback: true})
	production := newDests(r, egress.Policy{})
	for _, c := range []struct {
		ds        *dests
		host, key string
		addr      string // "": none pinned
	}{
		{loopback, "127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{loopback, "::ffff:127.0.0.1", "127.0.0.1", "::ffff:127.0.0.1"},
		{loopback, "localhost", "127.0.0.1", "127.0.0.1"}, // IPv4 first
		{production, "1.1.1.1", "1.1.1.1", "1.1.1.1"},
		{production, "::ffff:1.1.1.1", "1.1.1.1", "::ffff:1.1.1.1"},
		{production, "64:ff9b::101:101", "1.1.1.1", "64:ff9b::101:101"}, // NAT64
		{production, "victim.example", "1.1.1.1", "1.1.1.1"},
		{production, "mapped.example", "1.1.1.1", "::ffff:1.1.1.1"},
		{production, "private-first.test", "1.1.1.1", "1.1.1.1"}, // the first address the policy allows
		{production, "only-private.test", "name:only-private.test", ""},
		{production, "nowhere.test", "name:nowhere.test", ""},
		{production, "", "", ""},
	} {
		d := c.ds.of(context.Background(), c.host)
		if d.key != c.key || (c.addr == "" && d.addr.IsValid()) || (c.addr != "" && d.addr != netip.MustParseAddr(c.addr)) {
			t.Errorf("%q: key %q addr %v, want %q %q", c.host, d.key, d.addr, c.key, c.addr)
		}
	}
	// A name is resolved once per destTTL.
	now := time.Now()
	ds := newDests(r, egress.Policy{})
	ds.now = func() time.Time { return now }
	before := r.lookups
	ds.of(context.Background(), "victim.example")
	ds.of(context.Background(), "victim.example")
	if r.lookups != before+1 {
		t.Errorf("%d lookups within the TTL, want 1", r.lookups-before)
	}
	now = now.Add(destTTL)
	ds.of(context.Background(), "victim.example")
	if r.lookups != before+2 {
		t.Errorf("%d lookups after the TTL, want 2", r.lookups-before)
	}
}
