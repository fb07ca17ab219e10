package ratelimit

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func mustResolver(tb testing.TB, trusted, header string) *IPResolver {
	tb.Helper()
	ps, err := ParsePrefixes(trusted)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewIPResolver(ps, header)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func TestResolve(t *testing.T) {
	const trusted = "10.0.0.0/8, 192.0.2.10, 2001:db8:ffff::/48"
	tests := []struct {
		name    string
		header  string // X-Forwarded-For or X-Real-IP
		trusted string
		peer    string
		lines   []string
		want    string
	}{
		{name: "no proxies trusted: header ignored", trusted: "", peer: "198.51.100.1", lines: []string{"203.0.113.5"}, want: "198.51.100.1"},
		{name: "untrusted peer: spoofed header ignored", peer: "198.51.100.1", lines: []string{"203.0.113.5"}, want: "198.51.100.1"},
		{name: "untrusted peer inside a trusted-looking chain", peer: "198.51.100.1", lines: []string{"203.0.113.5, 10.0.0.1"}, want: "198.51.100.1"},
		{name: "trusted peer, no header", peer: "10.0.0.1", want: "10.0.0.1"},
		{name: "trusted peer, empty header", peer: "10.0.0.1", lines: []string{""}, want: "10.0.0.1"},
		{name: "one hop", peer: "10.0.0.1", lines: []string{"203.0.113.5"}, want: "203.0.113.5"},
		{name: "client spoofs left part", peer: "10.0.0.1", lines: []string{"1.2.3.4, 203.0.113.5"}, want: "203.0.113.5"},
		{name: "skips trusted hops from the right", peer: "10.0.0.1", lines: []string{"1.2.3.4, 203.0.113.5, 10.9.9.9, 192.0.2.10"}, want: "203.0.113.5"},
		{name: "all trusted: left-most", peer: "10.0.0.1", lines: []string{"10.1.1.1, 10.2.2.2"}, want: "10.1.1.1"},
		{name: "garbage left of client is never read", peer: "10.0.0.1", lines: []string{"<script>, 203.0.113.5"}, want: "203.0.113.5"},
		{name: "garbage right of client: nearest trusted hop", peer: "10.0.0.1", lines: []string{"203.0.113.5, unknown, 10.0.0.7"}, want: "10.0.0.7"},
		{name: "garbage at the right end: the peer", peer: "10.0.0.1", lines: []string{"203.0.113.5, unknown"}, want: "10.0.0.1"},
		{name: "several header lines are one list", peer: "10.0.0.1", lines: []string{"1.2.3.4", "203.0.113.5, 10.0.0.2"}, want: "203.0.113.5"},
		{name: "client appended its own line before the proxy's", peer: "10.0.0.1", lines: []string{"203.0.113.5", "10.0.0.2"}, want: "203.0.113.5"},
		{name: "spaces and empty elements", peer: "10.0.0.1", lines: []string{" 203.0.113.5 ,, 10.0.0.3 , "}, want: "203.0.113.5"},
		{name: "ipv4 with port", peer: "10.0.0.1", lines: []string{"203.0.113.5:4711"}, want: "203.0.113.5"},
		{name: "bracketed ipv6 with port", peer: "10.0.0.1", lines: []string{"[2001:db8::7]:443"}, want: "2001:db8::7"},
		{name: "bracketed ipv6", peer: "10.0.0.1", lines: []string{"[2001:db8::7]"}, want: "2001:db8::7"},
		{name: "bare ipv6", peer: "10.0.0.1", lines: []string{"2001:db8::7"}, want: "2001:db8::7"},
		{name: "ipv6 bad port", peer: "10.0.0.1", lines: []string{"[2001:db8::7]:99999"}, want: "10.0.0.1"},
		{name: "ipv4 in brackets is not ipv6", peer: "10.0.0.1", lines: []string{"[203.0.113.5]"}, want: "10.0.0.1"},
		{name: "mapped client unwrapped", peer: "10.0.0.1", lines: []string{"::ffff:203.0.113.5"}, want: "203.0.113.5"},
		{name: "mapped trusted hop skipped", peer: "10.0.0.1", lines: []string{"203.0.113.5, ::ffff:10.0.0.9"}, want: "203.0.113.5"},
		{name: "mapped peer is trusted", peer: "::ffff:10.0.0.1", lines: []string{"203.0.113.5"}, want: "203.0.113.5"},
		{name: "zone dropped", peer: "10.0.0.1", lines: []string{"fe80::1%eth0"}, want: "fe80::1"},
		{name: "ipv6 trusted peer", peer: "2001:db8:ffff::1", lines: []string{"2001:db8:1::5, 2001:db8:ffff::2"}, want: "2001:db8:1::5"},
		{name: "untrusted mapped peer unwrapped", peer: "::ffff:198.51.100.1", lines: []string{"203.0.113.5"}, want: "198.51.100.1"},

		{name: "x-real-ip", header: "X-Real-IP", peer: "10.0.0.1", lines: []string{"203.0.113.5"}, want: "203.0.113.5"},
		{name: "x-real-ip untrusted peer", header: "X-Real-IP", peer: "198.51.100.1", lines: []string{"203.0.113.5"}, want: "198.51.100.1"},
		{name: "x-real-ip last line wins", header: "X-Real-IP", peer: "10.0.0.1", lines: []string{"1.2.3.4", "203.0.113.5"}, want: "203.0.113.5"},
		{name: "x-real-ip list is invalid", header: "X-Real-IP", peer: "10.0.0.1", lines: []string{"1.2.3.4, 203.0.113.5"}, want: "10.0.0.1"},
		{name: "x-real-ip garbage", header: "X-Real-IP", peer: "10.0.0.1", lines: []string{"localhost"}, want: "10.0.0.1"},
		{name: "x-real-ip trusted value taken as is", header: "X-Real-IP", peer: "10.0.0.1", lines: []string{"10.0.0.5"}, want: "10.0.0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trusted
			if strings.HasPrefix(tt.name, "no proxies") {
				tr = tt.trusted
			}
			r := mustResolver(t, tr, tt.header)
			got := r.Resolve(netip.MustParseAddr(tt.peer), tt.lines...)
			if got != netip.MustParseAddr(tt.want) {
				t.Errorf("Resolve(%s, %q) = %s, want %s", tt.peer, tt.lines, got, tt.want)
			}

			// The same through Fiber, with the lines as separate headers.
			app := fiber.New()
			var viaFiber netip.Addr
			app.Use(func(c *fiber.Ctx) error { viaFiber = r.ClientIP(c); return c.SendStatus(204) })
			var hdr []string
			for _, l := range tt.lines {
				hdr = append(hdr, r.Header(), l)
			}
			do(t, app, tt.peer, hdr...)
			if viaFiber != got {
				t.Errorf("ClientIP = %s, Resolve = %s", viaFiber, got)
			}
		})
	}
}

func TestClientKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"203.0.113.5", "203.0.113.5"},
		{"::ffff:203.0.113.5", "203.0.113.5"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
	}
	for _, tt := range tests {
		if got := ClientKey(netip.MustParseAddr(tt.in)); got != tt.want {
			t.Errorf("ClientKey(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := ClientKey(netip.Addr{}); got != "invalid" {
		t.Errorf("ClientKey(zero) = %q", got)
	}
}

func TestNewIPResolverRejectsUnknownHeader(t *testing.T) {
	if _, err := NewIPResolver(nil, "Forwarded"); err == nil {
		t.Fatal("want an error for an unsupported header")
	}
	r, err := NewIPResolver(nil, "")
	if err != nil || r.Header() != "X-Forwarded-For" {
		t.Fatalf("default header: %v %v", r, err)
	}
}

// FuzzResolve checks the resolver's promises on arbitrary headers: it never
// panics, always yields a valid canonical address, ignores headers from
// untrusted peers, and only names a client that the header lists with
// nothing but trusted proxies to its right.
func FuzzResolve(f *testing.F) {
	seeds := []struct{ peer, xff string }{
		{"10.0.0.1", "203.0.113.5"},
		{"10.0.0.1", "1.2.3.4, 203.0.113.5, 10.0.0.2"},
		{"10.0.0.1", "[2001:db8::1]:80, ::ffff:10.1.1.1"},
		{"198.51.100.1", "203.0.113.5"},
		{"10.0.0.1", ",,, ,"},
		{"10.0.0.1", "unknown, 10.0.0.3"},
		{"::ffff:10.0.0.1", "fe80::1%25eth0"},
		{"10.0.0.1", "[::ffff:1.2.3.4]"},
		{"10.0.0.1", "1.2.3.4:0"},
	}
	for _, s := range seeds {
		f.Add(s.peer, s.xff)
	}
	trustedPs, _ := ParsePrefixes("10.0.0.0/8, 2001:db8:ffff::/48")
	xff, _ := NewIPResolver(trustedPs, "X-Forwarded-For")
	realIP, _ := NewIPResolver(trustedPs, "X-Real-IP")
	f.Fuzz(func(t *testing.T, peerStr, header string) {
		peer, err := netip.ParseAddr(peerStr)
		if err != nil {
			peer = netip.MustParseAddr("10.0.0.1")
		}
		canonPeer := canonicalAddr(peer)
		for _, r := range []*IPResolver{xff, realIP} {
			got := r.Resolve(peer, header)
			if !got.IsValid() || got.Is4In6() || got.Zone() != "" {
				t.Fatalf("%s: Resolve(%s, %q) = %v: not a canonical address", r.Header(), peer, header, got)
			}
			if !r.Trusted(peer) {
				if got != canonPeer {
					t.Fatalf("%s: untrusted peer %s, header %q: got %s", r.Header(), peer, header, got)
				}
				continue
			}
			if got == canonPeer {
				continue
			}
			// got must be one of the header's elements, and everything to its
			// right must be a trusted proxy.
			elems := strings.Split(header, ",")
			if r.Header() == "X-Real-IP" {
				elems = []string{header}
			}
			found := false
			for i := len(elems) - 1; i >= 0; i-- {
				e := strings.TrimSpace(elems[i])
				if e == "" {
					continue
				}
				a, ok := parseHop([]byte(e))
				if ok && a == got {
					found = true
					break
				}
				if !ok || !r.Trusted(a) {
					t.Fatalf("%s: Resolve(%s, %q) = %s, but %q to its right is not a trusted proxy", r.Header(), peer, header, got, e)
				}
			}
			if !found {
				t.Fatalf("%s: Resolve(%s, %q) = %s, not in the header", r.Header(), peer, header, got)
			}
		}
	})
}

// FuzzParseHop checks that any accepted hop is a canonical address that
// parses back to itself.
func FuzzParseHop(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4:80", "[::1]:80", "[::1]", "::ffff:1.2.3.4", "fe80::1%eth0", "[fe80::1%eth0]:1", "[1.2.3.4]", "]", "["} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := parseHop([]byte(s))
		if !ok {
			return
		}
		if !a.IsValid() || a.Is4In6() || a.Zone() != "" {
			t.Fatalf("parseHop(%q) = %v: not canonical", s, a)
		}
		b, ok := parseHop([]byte(a.String()))
		if !ok || b != a {
			t.Fatalf("parseHop(%q) = %s does not round-trip (%v %v)", s, a, b, ok)
		}
	})
}
