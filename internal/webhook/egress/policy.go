package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrBlocked is matched (errors.Is) by every refusal of an address.
var ErrBlocked = errors.New("address not allowed for webhook deliveries")

// BlockedError says which address was refused and why.
type BlockedError struct {
	Addr   netip.Addr
	Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s is %s: not allowed for webhook deliveries", e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Policy decides which addresses deliveries may reach: public unicast
// addresses only, and loopback too when AllowLoopback is set (local
// development). Private, link-local (cloud metadata), shared, reserved,
// documentation, benchmarking, multicast and unspecified addresses are
// always refused.
type Policy struct {
	AllowLoopback bool
}

type rule struct {
	prefix netip.Prefix
	reason string
}

func rules(pairs ...string) []rule {
	out := make([]rule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, rule{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// blockedV4 are the IPv4 special-purpose ranges (IANA registry) no
// delivery may reach. Specific entries come before the ranges holding
// them, so the reason names the most specific use.
var blockedV4 = rules(
	"169.254.169.254/32", "a cloud metadata service",
	"169.254.170.2/32", "a cloud metadata service",
	"100.100.100.200/32", "a cloud metadata service",
	"192.0.0.192/32", "a cloud metadata service",
	"0.0.0.0/8", "the unspecified network",
	"10.0.0.0/8", "a private address",
	"100.64.0.0/10", "a shared (carrier-grade NAT) address",
	"127.0.0.0/8", "a loopback address",
	"169.254.0.0/16", "a link-local address",
	"172.16.0.0/12", "a private address",
	"192.0.0.0/24", "reserved for IETF protocol assignments",
	"192.0.2.0/24", "a documentation address",
	"192.88.99.0/24", "a 6to4 relay address",
	"192.168.0.0/16", "a private address",
	"198.18.0.0/15", "a benchmarking address",
	"198.51.100.0/24", "a documentation address",
	"203.0.113.0/24", "a documentation address",
	"224.0.0.0/4", "a multicast address",
	"240.0.0.0/4", "a reserved address",
)

// blockedV6 are refused even inside 2000::/3, the only IPv6 range
// allowed at all.
var blockedV6 = rules(
	"2001::/23", "reserved for IETF protocol assignments (Teredo, ORCHID, ...)",
	"2001:db8::/32", "a documentation address",
	"3fff::/20", "a documentation address",
)

var (
	loopbackV4   = netip.MustParsePrefix("127.0.0.0/8")
	globalV6     = netip.MustParsePrefix("2000::/3")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	v4Compatible = netip.MustParsePrefix("::/96")
	uniqueLocal  = netip.MustParsePrefix("fc00::/7")
	linkLocalV6  = netip.MustParsePrefix("fe80::/10")
	awsMetaV6    = netip.MustParseAddr("fd00:ec2::254")
)

// Unwrap returns the IPv4 address an IPv6 address embeds (IPv4-mapped,
// NAT64 64:ff9b::/96, 6to4 2002::/16, IPv4-compatible ::/96), or a
// itself. It strips a zone.
func Unwrap(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case v4Compatible.Contains(a) && a != netip.IPv6Loopback() && a != netip.IPv6Unspecified():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return a
}

// Check returns nil when a delivery may connect to a, a *BlockedError
// otherwise.
func (p Policy) Check(a netip.Addr) error {
	if !a.IsValid() {
		return &BlockedError{a, "not an IP address"}
	}
	if a.Zone() != "" {
		return &BlockedError{a, "a scoped (zoned) address"}
	}
	u := Unwrap(a)
	if u != a {
		if err := p.Check(u); err != nil {
			return &BlockedError{a, fmt.Sprintf("an IPv6 form of %s (%s)", u, err.(*BlockedError).Reason)}
		}
		return nil
	}
	if a.Is4() {
		if p.AllowLoopback && loopbackV4.Contains(a) {
			return nil
		}
		for _, r := range blockedV4 {
			if r.prefix.Contains(a) {
				return &BlockedError{a, r.reason}
			}
		}
		return nil
	}
	switch {
	case a == netip.IPv6Loopback():
		if p.AllowLoopback {
			return nil
		}
		return &BlockedError{a, "a loopback address"}
	case a == netip.IPv6Unspecified():
		return &BlockedError{a, "the unspecified address"}
	case a == awsMetaV6:
		return &BlockedError{a, "a cloud metadata service"}
	case nat64Local.Contains(a):
		return &BlockedError{a, "a local-use NAT64 address"}
	case uniqueLocal.Contains(a):
		return &BlockedError{a, "a private (unique local) address"}
	case linkLocalV6.Contains(a):
		return &BlockedError{a, "a link-local address"}
	case a.IsMulticast():
		return &BlockedError{a, "a multicast address"}
	case !globalV6.Contains(a):
		return &BlockedError{a, "outside global unicast IPv6 (2000::/3)"}
	}
	for _, r := range blockedV6 {
		if r.prefix.Contains(a) {
			return &BlockedError{a, r.reason}
		}
	}
	return nil
}
