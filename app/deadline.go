package app

import (
	"net"
	"time"
)

// The server's timeouts (Deps.Timeouts overrides them).
const (
	defaultReadTimeout  = 15 * time.Second // to read one request, headers and body
	defaultWriteTimeout = 15 * time.Second // to write one answer
	defaultIdleTimeout  = 90 * time.Second // between two requests of a kept-alive connection
)

// Timeouts bound how long a connection may take. Zero fields take the
// defaults: 15 s to read a request, 15 s to write an answer, 90 s idle
// between requests (longer than the usual proxy's keep-alive, so that a
// proxy, not the node, closes idle upstream connections).
type Timeouts struct {
	Read, Write, Idle time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Read <= 0 {
		t.Read = defaultReadTimeout
	}
	if t.Write <= 0 {
		t.Write = defaultWriteTimeout
	}
	if t.Idle <= 0 {
		t.Idle = defaultIdleTimeout
	}
	return t
}

// slack is how much earlier than asked a deadline may fall (see
// deadlineConn): an eighth of the shortest timeout, at most a second.
func (t Timeouts) slack() time.Duration {
	return min(time.Second, min(t.Read, t.Write, t.Idle)/8)
}

// deadlineListener hands out deadlineConns.
type deadlineListener struct {
	net.Listener
	slack time.Duration
}

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c, slack: l.slack}, nil
}

// deadlineConn applies the deadlines the server asks for when it reads or
// writes, and only when they moved. The server asks on every request: a
// read deadline for the idle wait, another to read the request, a write
// deadline for the answer. Each one set on a socket rearms a runtime timer
// (with the clock read), a cost every request paid, 3 to 4% of a 304's
// answers per second. Here a deadline later than the one in force by less
// than slack is not applied: the one in force stays, so a read or write
// may time out up to slack earlier than asked, never later. A deadline
// earlier than the one in force, or none at all, is applied at once: a
// slow client is cut when the server says, even on a connection whose
// earlier requests left a later deadline in force.
//
// The server (fasthttp) sets deadlines and reads on its connection's
// goroutine, and writes on it too: the fields need no lock.
type deadlineConn struct {
	net.Conn
	slack       time.Duration
	read, write deadline
}

// deadline is one direction's: what the server asked for, and what the
// socket has (a new socket has none: the zero time).
type deadline struct{ want, set time.Time }

// sync applies want with apply when it moved: one of want and set is
// "none" and the other is not, want is earlier, or want is later by more
// than slack.
func (d *deadline) sync(slack time.Duration, apply func(time.Time) error) error {
	switch {
	case d.want.IsZero() || d.set.IsZero():
		if d.want.IsZero() == d.set.IsZero() {
			return nil
		}
	case !d.want.Before(d.set) && d.want.Sub(d.set) <= slack:
		return nil
	}
	if err := apply(d.want); err != nil {
		return err
	}
	d.set = d.want
	return nil
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.read.want, c.write.want = t, t
	return nil
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.read.want = t
	return nil
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.write.want = t
	return nil
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if err := c.read.sync(c.slack, c.Conn.SetReadDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if err := c.write.sync(c.slack, c.Conn.SetWriteDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// NetConn returns the connection whose deadlines are kept (see
// httpapi.TCPConn).
func (c *deadlineConn) NetConn() net.Conn { return c.Conn }
