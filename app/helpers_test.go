package app_test

import (
	"bytes"
	"io"
	"net"
	"time"

	"github.com/gagliardetto/solana-go"
)

func parseSig(s string) ([64]byte, error) {
	sig, err := solana.SignatureFromBase58(s)
	return sig, err
}

// pipeConn is a connection that sends the same request left times, then
// EOF, and reads the answers (counting their status lines).
type pipeConn struct {
	req     []byte
	off     int
	left    int
	first   []byte
	tail    []byte
	answers int
}

var statusLine = []byte("HTTP/1.1 ")

func (c *pipeConn) Read(p []byte) (int, error) {
	n := 0
	for c.left > 0 && n < len(p) {
		k := copy(p[n:], c.req[c.off:])
		n += k
		if c.off += k; c.off == len(c.req) {
			c.off, c.left = 0, c.left-1
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *pipeConn) Write(p []byte) (int, error) {
	if c.first == nil {
		c.first = append([]byte(nil), p[:min(len(p), 64)]...)
	}
	// Count status lines, also those split between two writes.
	c.tail = append(c.tail, p...)
	c.answers += bytes.Count(c.tail, statusLine)
	c.tail = append(c.tail[:0], c.tail[max(0, len(c.tail)-len(statusLine)+1):]...)
	return len(p), nil
}

func (c *pipeConn) Close() error        { return nil }
func (c *pipeConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *pipeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }
