package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Origin is the public origin a node speaks for (ATTESTD_PUBLIC_URL):
// the scheme and host[:port] browsers and clients use to reach it, behind
// whatever proxy. Sign-in messages must name it, paid resources are
// described by it, and the session cookie is Secure when it is https. It
// is configured, never taken from a request header.
type Origin struct {
	// Scheme is http or https.
	Scheme string
	// Host is host[:port] as in a URL: lower case, IPv6 in brackets, no
	// default port.
	Host string
}

// ErrNoPublicURL is returned by Config.PublicOrigin when a node listens
// beyond loopback and ATTESTD_PUBLIC_URL is not set.
var ErrNoPublicURL = errors.New("ATTESTD_PUBLIC_URL is not set and ATTESTD_HTTP_ADDR listens beyond loopback: " +
	"set ATTESTD_PUBLIC_URL to the origin clients use (such as https://attestd.example.com) to turn on the web console and pay per request")

// ParseOrigin reads an origin: scheme http or https, a host, an optional
// port; no path other than "/", no query, fragment or userinfo.
func ParseOrigin(s string) (Origin, error) {
	var o Origin
	u, err := url.Parse(s)
	if err != nil {
		return o, fmt.Errorf("want an origin such as https://attestd.example.com, got %q: %v", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return o, fmt.Errorf("want an http or https origin such as https://attestd.example.com, got %q", s)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return o, fmt.Errorf("want scheme://host[:port], got %q", s)
	case u.User != nil:
		return o, fmt.Errorf("an origin has no user or password, got %q", s)
	case u.Path != "" && u.Path != "/", u.RawPath != "":
		return o, fmt.Errorf("an origin has no path (the node serves at /), got %q", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#"):
		return o, fmt.Errorf("an origin has no query or fragment, got %q", s)
	}
	host := strings.ToLower(u.Hostname())
	if strings.ContainsAny(host, " %\\") {
		return o, fmt.Errorf("bad host %q in %q", host, s)
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			// Browsers send, and wallets compare with, the A-label.
			return o, fmt.Errorf("write the host of %q in ASCII (an internationalized name as its xn-- form)", s)
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return o, fmt.Errorf("bad port %q in %q", p, s)
		}
		if !(scheme == "http" && n == 80 || scheme == "https" && n == 443) {
			host += ":" + strconv.Itoa(n)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return o, fmt.Errorf("empty port in %q", s)
	}
	return Origin{Scheme: scheme, Host: host}, nil
}

// IsZero reports whether no origin is configured.
func (o Origin) IsZero() bool { return o.Host == "" }

// String is scheme://host[:port].
func (o Origin) String() string {
	if o.IsZero() {
		return ""
	}
	return o.Scheme + "://" + o.Host
}

// Secure reports whether clients reach the node over https.
func (o Origin) Secure() bool { return o.Scheme == "https" }

// URL is the absolute URL of path (which starts with /) at the origin.
func (o Origin) URL(path string) string { return o.String() + path }

// LoopbackOrigin is the default origin of a node listening on addr
// (host:port): http://addr when the host is loopback; ok false otherwise
// (a wildcard, another address, a port chosen by the system).
func LoopbackOrigin(addr string) (Origin, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" || !IsLoopbackHost(host) {
		return Origin{}, false
	}
	o, err := ParseOrigin("http://" + net.JoinHostPort(host, port))
	return o, err == nil
}

// IsLoopbackHost reports whether host (without port; brackets allowed)
// is this machine: localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	h := strings.Trim(host, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// PublicOrigin is the origin the node speaks for: ATTESTD_PUBLIC_URL, or
// http://ATTESTD_HTTP_ADDR on a loopback listener; ErrNoPublicURL
// otherwise.
func (c Config) PublicOrigin() (Origin, error) {
	if !c.PublicURL.IsZero() {
		return c.PublicURL, nil
	}
	if o, ok := LoopbackOrigin(c.HTTPAddr); ok {
		return o, nil
	}
	return Origin{}, ErrNoPublicURL
}
