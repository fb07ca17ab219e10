package ratelimit

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// IPResolver finds the client IP of a request: the socket peer, unless the
// peer is a trusted proxy, in which case the proxy header names the client.
//
// With X-Forwarded-For the list (all header lines, in order) is walked from
// the right, skipping trusted proxies; the first untrusted address is the
// client. If every address is trusted the left-most one is the client. If
// the walk meets an entry that is not an IP address, the chain cannot be
// believed beyond it and the last trusted address seen stands for the
// client. With X-Real-IP the last header line must hold one IP address.
// A header from an untrusted peer is ignored. IPv4-mapped IPv6 addresses
// are unmapped and zones dropped.
type IPResolver struct {
	trusted []netip.Prefix
	realIP  bool // X-Real-IP instead of X-Forwarded-For
}

// NewIPResolver returns a resolver that believes header (X-Forwarded-For or
// X-Real-IP; empty means X-Forwarded-For) from the trusted proxies.
func NewIPResolver(trusted []netip.Prefix, header string) (*IPResolver, error) {
	if header == "" {
		header = DefaultProxyHeader
	}
	h, err := canonicalProxyHeader(header)
	if err != nil {
		return nil, err
	}
	return &IPResolver{trusted: normalizePrefixes(trusted), realIP: h == "X-Real-IP"}, nil
}

// Header returns the proxy header the resolver reads.
func (r *IPResolver) Header() string {
	if r.realIP {
		return "X-Real-IP"
	}
	return "X-Forwarded-For"
}

// Trusted reports whether a is a trusted proxy.
func (r *IPResolver) Trusted(a netip.Addr) bool {
	return containsAddr(r.trusted, canonicalAddr(a))
}

// ClientIP returns the client IP of the request. The result holds no
// reference to Fiber's buffers. A peer that is not an IP connection
// (a unix socket) gives the unspecified address 0.0.0.0.
func (r *IPResolver) ClientIP(c *fiber.Ctx) netip.Addr {
	peer := peerAddr(c)
	if len(r.trusted) == 0 || !r.Trusted(peer) {
		return peer
	}
	h := &c.Request().Header
	if r.realIP {
		vals := h.PeekAll("X-Real-IP")
		if len(vals) == 0 {
			return peer
		}
		return r.fromRealIP(peer, vals[len(vals)-1])
	}
	return r.fromForwardedFor(peer, h.PeekAll(fiber.HeaderXForwardedFor))
}

// Resolve is ClientIP on plain values: the socket peer and the proxy
// header's lines in the order received.
func (r *IPResolver) Resolve(peer netip.Addr, headerLines ...string) netip.Addr {
	peer = canonicalAddr(peer)
	if len(r.trusted) == 0 || !r.Trusted(peer) || len(headerLines) == 0 {
		return peer
	}
	lines := make([][]byte, len(headerLines))
	for i, l := range headerLines {
		lines[i] = []byte(l)
	}
	if r.realIP {
		return r.fromRealIP(peer, lines[len(lines)-1])
	}
	return r.fromForwardedFor(peer, lines)
}

func (r *IPResolver) fromRealIP(peer netip.Addr, v []byte) netip.Addr {
	a, ok := parseHop(bytes.TrimSpace(v))
	if !ok {
		return peer
	}
	return a
}

// fromForwardedFor walks the X-Forwarded-For lines from the right. The
// caller has checked that peer is trusted.
func (r *IPResolver) fromForwardedFor(peer netip.Addr, lines [][]byte) netip.Addr {
	last := peer // the nearest trusted hop so far
	for i := len(lines) - 1; i >= 0; i-- {
		v := lines[i]
		for len(v) > 0 {
			j := bytes.LastIndexByte(v, ',')
			elem := bytes.TrimSpace(v[j+1:])
			if j < 0 {
				v = nil
			} else {
				v = v[:j]
			}
			if len(elem) == 0 {
				continue // empty list element
			}
			a, ok := parseHop(elem)
			if !ok {
				return last
			}
			if !containsAddr(r.trusted, a) {
				return a
			}
			last = a
		}
	}
	return last
}

// parseHop parses one forwarded address: an IP, optionally with a port
// ("1.2.3.4:80", "[::1]:80") or in brackets ("[::1]"), as some proxies
// write them. The result is canonical (unmapped, no zone).
func parseHop(b []byte) (netip.Addr, bool) {
	if len(b) == 0 || len(b) > 64 {
		return netip.Addr{}, false
	}
	s := string(b) // copy: b is Fiber's buffer
	if s[0] == '[' {
		end := -1
		for i := 1; i < len(s); i++ {
			if s[i] == ']' {
				end = i
				break
			}
		}
		if end < 0 {
			return netip.Addr{}, false
		}
		rest := s[end+1:]
		if rest != "" && !validPort(rest) {
			return netip.Addr{}, false
		}
		s = s[1:end]
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		return canonicalAddr(a), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return canonicalAddr(a), true
	}
	// IPv4 with a port. (An IPv6 address with a port must be bracketed.)
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Is4() {
		return canonicalAddr(ap.Addr()), true
	}
	return netip.Addr{}, false
}

func validPort(s string) bool {
	if len(s) < 2 || s[0] != ':' {
		return false
	}
	n, err := strconv.ParseUint(s[1:], 10, 16)
	return err == nil && n <= 65535
}

// peerAddr is the socket peer of the request, canonical.
func peerAddr(c *fiber.Ctx) netip.Addr {
	a, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok {
		return netip.IPv4Unspecified()
	}
	return canonicalAddr(a)
}

// canonicalAddr unmaps IPv4-mapped IPv6 and drops the zone.
func canonicalAddr(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// ClientKey is the rate-limit identity of a client address: the IPv4
// address itself, or the /64 network of an IPv6 address (one host usually
// owns a whole /64). Log it beside the client IP to see who was limited.
func ClientKey(a netip.Addr) string {
	var buf [48]byte
	return string(appendClientKey(buf[:0], a))
}

func appendClientKey(b []byte, a netip.Addr) []byte {
	a = canonicalAddr(a)
	if a.Is4() {
		return a.AppendTo(b)
	}
	if !a.IsValid() {
		return append(b, "invalid"...)
	}
	p := netip.PrefixFrom(a, 64).Masked()
	return p.AppendTo(b)
}

// String describes the resolver (for logs).
func (r *IPResolver) String() string {
	return fmt.Sprintf("IPResolver{header=%s trusted=%v}", r.Header(), r.trusted)
}
