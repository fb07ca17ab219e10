package httpapi

import "net"

// TCPConn returns the TCP socket under a connection a node's listeners
// handed out (nil when there is none: an in-memory test connection). The
// listeners' wrappers give the connection they wrap by NetConn. A handler
// that takes its connection over (the live stream) uses it to size the
// socket's send buffer and to wake a blocked read.
func TCPConn(c net.Conn) *net.TCPConn {
	for c != nil {
		switch v := c.(type) {
		case *net.TCPConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}
