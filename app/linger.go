package app

import (
	"io"
	"net"
	"time"
)

// Lingering close. When the server answers before it has read the whole
// request (431 for headers too large, 413, a malformed request) and
// closes, the client may still be sending; closing a socket with unread
// input makes the kernel send a reset, and the client then loses the
// answer it was sent ("broken pipe", "connection reset"). So a closed
// connection first shuts its write side (the answer and a FIN go out),
// then reads and discards what the client still sends, for a bounded time
// and number of bytes, and only then closes.
const (
	lingerTimeout = time.Second
	lingerBytes   = 256 << 10
)

// lingerListener gives every accepted TCP connection a lingering close.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &lingerConn{TCPConn: tc}, nil
	}
	return c, nil
}

type lingerConn struct{ *net.TCPConn }

// Close shuts the write side now and releases the socket in the
// background once the client stopped sending (or after lingerTimeout).
func (c *lingerConn) Close() error {
	if err := c.TCPConn.CloseWrite(); err != nil {
		return c.TCPConn.Close()
	}
	go func() {
		_ = c.TCPConn.SetReadDeadline(time.Now().Add(lingerTimeout))
		_, _ = io.CopyN(io.Discard, c.TCPConn, lingerBytes)
		_ = c.TCPConn.Close()
	}()
	return nil
}

// NetConn returns the socket (httpapi.TCPConn unwraps this package's
// connections by it).
func (c *lingerConn) NetConn() net.Conn { return c.TCPConn }
