package app

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/attestd/attestd/internal/httpcache"
	"github.com/prometheus/client_golang/prometheus"
)

// ConnLimit caps the connections one client IP may hold open at once, for
// nodes reached directly (without a load balancer in front, one client
// could otherwise hold every connection). IPv6 clients count per /64.
type ConnLimit struct {
	PerIP int // 0: no cap
	// Exempt says which peers are never capped: the trusted proxies, whose
	// connections carry many clients.
	Exempt func(netip.Addr) bool
}

// limitListener enforces a ConnLimit on accepted connections. A refused
// connection gets a short 429 in the error envelope and is closed.
type limitListener struct {
	net.Listener
	lim     ConnLimit
	refused prometheus.Counter
	mu      sync.Mutex
	open    map[netip.Prefix]int
}

func newLimitListener(ln net.Listener, lim ConnLimit, refused prometheus.Counter) net.Listener {
	if lim.PerIP <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, lim: lim, refused: refused, open: map[netip.Prefix]int{}}
}

const refusedBody = `{"error":{"code":"RATE_LIMITED","message":"too many open connections from your address; reuse one"}}`

func refusedAnswer() []byte {
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Cache-Control: " + httpcache.NoStore + "\r\n" +
		requestIDHeader + ": " + newRequestID() + "\r\nRetry-After: 1\r\nContent-Length: " +
		strconv.Itoa(len(refusedBody)) + "\r\n\r\n" + refusedBody)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil {
			return c, nil // not an IP peer (a unix socket): nothing to count
		}
		ip := ap.Addr().Unmap().WithZone("")
		if l.lim.Exempt != nil && l.lim.Exempt(ip) {
			return c, nil
		}
		bits := 32
		if ip.Is6() {
			bits = 64
		}
		key := netip.PrefixFrom(ip, bits).Masked()
		l.mu.Lock()
		if l.open[key] >= l.lim.PerIP {
			l.mu.Unlock()
			l.refused.Inc()
			go func() {
				_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				_, _ = c.Write(refusedAnswer())
				_ = c.Close()
			}()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

func (l *limitListener) release(key netip.Prefix) {
	l.mu.Lock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
	l.mu.Unlock()
}

// countedConn gives its slot back once, when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// NetConn returns the connection counted (see httpapi.TCPConn).
func (c *countedConn) NetConn() net.Conn { return c.Conn }
