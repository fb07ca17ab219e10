package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// URLError is a refusal of a webhook URL, in words for its owner.
type URLError struct{ Msg string }

func (e *URLError) Error() string { return e.Msg }

func refuse(format string, args ...any) error { return &URLError{fmt.Sprintf(format, args...)} }

// CheckURL validates the form of a webhook URL without any network
// access and returns it normalised (scheme and host in lower case): an
// absolute https URL (http too when AllowLoopback is set), without
// credentials or a fragment, whose host is a DNS name of two or more
// labels (one label too, such as localhost, when AllowLoopback is set), a
// dotted-decimal IPv4 address or a bracketed IPv6 address. Numeric hosts
// in other forms (2130706433, 0177.0.0.1, 0x7f.1, 127.1) are refused: they
// mean different addresses to different parsers. An IP address host must
// pass the policy.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, refuse("url is required")
	}
	if len(raw) > MaxURLLength {
		return nil, refuse("url must be at most %d bytes", MaxURLLength)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f {
			return nil, refuse("url must not contain spaces or control characters (percent-encode them)")
		}
		if raw[i] >= 0x80 {
			return nil, refuse("url must be ASCII: percent-encode the path and write an international host name in its xn-- form")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refuse("url is not a valid URL: %s", strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(raw)+": "))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowLoopback:
	case u.Scheme == "http":
		return nil, refuse("url must use https (http is allowed for local development only, with ATTESTD_WEBHOOK_ALLOW_LOOPBACK=1)")
	case u.Scheme == "":
		return nil, refuse("url must be absolute, such as https://example.com/hooks")
	default:
		return nil, refuse("url must use https, not %s", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, refuse("url must be absolute with a host, such as https://example.com/hooks")
	}
	if u.User != nil {
		return nil, refuse("url must not carry credentials (user:password@); deliveries are authenticated by their signature")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, refuse("url must not have a fragment (#...): it is never sent")
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, refuse("url port must be from 1 to 65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, refuse("url has an empty port")
	}
	host := strings.ToLower(u.Hostname())
	if err := p.checkHostForm(host); err != nil {
		return nil, err
	}
	if u.Port() != "" {
		u.Host = net.JoinHostPort(host, u.Port())
	} else if strings.Contains(host, ":") {
		u.Host = "[" + host + "]"
	} else {
		u.Host = host
	}
	return u, nil
}

// checkHostForm checks a lower-case host name or address literal.
func (p Policy) checkHostForm(host string) error {
	if host == "" {
		return refuse("url must have a host")
	}
	if strings.Contains(host, ":") || strings.Contains(host, "%") { // IPv6 literal (brackets removed)
		a, err := netip.ParseAddr(host)
		if err != nil {
			return refuse("url host %q is not a valid IPv6 address", host)
		}
		if a.Zone() != "" {
			return refuse("url host must not carry an IPv6 zone")
		}
		return p.hostAddr(a)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.hostAddr(a)
	}
	name := strings.TrimSuffix(host, ".")
	if len(name) > 253 || name == "" {
		return refuse("url host is not a valid DNS name")
	}
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if allDigits(last) || strings.HasPrefix(last, "0x") {
		return refuse("url host %q looks like an IP address in a non-standard form: write IPv4 addresses as four decimal numbers (a.b.c.d)", host)
	}
	for _, l := range labels {
		if !validLabel(l) {
			return refuse("url host %q is not a valid DNS name (letters, digits and '-', labels of 1-63 characters)", host)
		}
	}
	if len(labels) < 2 && !p.AllowLoopback {
		return refuse("url host %q is not a fully qualified domain name", host)
	}
	return nil
}

func (p Policy) hostAddr(a netip.Addr) error {
	if err := p.Check(a); err != nil {
		return refuse("url host %s", strings.TrimSuffix(err.Error(), ": not allowed for webhook deliveries")+": not allowed")
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Resolver looks up the addresses of a host name.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckHost resolves the URL's host (within timeout) and checks every
// address it has: a name with any refused address is refused, as is one
// that does not resolve. It is the check at creation; the dialer checks
// again at every connection.
func (p Policy) CheckHost(ctx context.Context, r Resolver, u *url.URL, timeout time.Duration) error {
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return p.hostAddr(a)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", strings.TrimSuffix(host, "."))
	if err != nil || len(addrs) == 0 {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsTimeout || ctx.Err() != nil {
			return refuse("url host %s did not resolve within %s; try again", host, timeout)
		}
		return refuse("url host %s does not resolve to an address", host)
	}
	for _, a := range addrs {
		if err := p.Check(a); err != nil {
			// The address itself is not shown: that would let anyone map
			// names of a private network to its addresses.
			return refuse("url host %s resolves to %s: not allowed", host, err.(*BlockedError).Reason)
		}
	}
	return nil
}
