package app

import (
	"net"
	"testing"
	"time"
)

// recordingConn records the deadlines applied to it.
type recordingConn struct {
	net.Conn
	reads, writes []time.Time
}

func (c *recordingConn) SetReadDeadline(t time.Time) error { c.reads = append(c.reads, t); return nil }
func (c *recordingConn) SetWriteDeadline(t time.Time) error {
	c.writes = append(c.writes, t)
	return nil
}
func (c *recordingConn) Read(p []byte) (int, error)  { return len(p), nil }
func (c *recordingConn) Write(p []byte) (int, error) { return len(p), nil }

func TestDeadlineConnAppliesOnlyMovedDeadlines(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const slack = time.Second
	// Each step asks for a deadline, then reads (or writes); applied is
	// what the socket must have been given by that step (nil: nothing).
	type step struct {
		want    time.Time
		applied *time.Time
	}
	p := func(t time.Time) *time.Time { return &t }
	cases := []struct {
		name  string
		steps []step
	}{
		{"none asked, none applied", []step{{time.Time{}, nil}, {time.Time{}, nil}}},
		{"the first deadline is applied", []step{{at(15 * time.Second), p(at(15 * time.Second))}}},
		{"later by less than slack: the one in force stays", []step{
			{at(15 * time.Second), p(at(15 * time.Second))},
			{at(15*time.Second + 300*time.Millisecond), nil},
			{at(15*time.Second + slack), nil},
		}},
		{"later by more than slack: applied", []step{
			{at(15 * time.Second), p(at(15 * time.Second))},
			{at(15*time.Second + slack + time.Nanosecond), p(at(15*time.Second + slack + time.Nanosecond))},
		}},
		{"earlier, however little: applied at once", []step{
			{at(90 * time.Second), p(at(90 * time.Second))},
			{at(90*time.Second - time.Nanosecond), p(at(90*time.Second - time.Nanosecond))},
			{at(16 * time.Second), p(at(16 * time.Second))},
		}},
		{"keep-alive pattern: idle wait, then the request's own deadline", []step{
			{at(90 * time.Second), p(at(90 * time.Second))},                                   // idle wait of request 2
			{at(15 * time.Second), p(at(15 * time.Second))},                                   // its headers trickle in: cut at 15 s
			{at(90*time.Second + time.Millisecond), p(at(90*time.Second + time.Millisecond))}, // request 3 waits
			{at(90*time.Second + 2*time.Millisecond), nil},                                    // request 4, 1 ms later
		}},
		{"none after one: cleared", []step{
			{at(15 * time.Second), p(at(15 * time.Second))},
			{time.Time{}, p(time.Time{})},
			{time.Time{}, nil},
			{at(15 * time.Second), p(at(15 * time.Second))},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, write := range []bool{false, true} {
				rc := &recordingConn{}
				c := &deadlineConn{Conn: rc, slack: slack}
				for i, s := range tc.steps {
					got := &rc.reads
					if write {
						got = &rc.writes
						_ = c.SetWriteDeadline(s.want)
						_, _ = c.Write([]byte("x"))
					} else {
						_ = c.SetReadDeadline(s.want)
						_, _ = c.Read(make([]byte, 1))
					}
					switch {
					case s.applied == nil && len(*got) > 0:
						t.Fatalf("write=%v step %d: applied %v, want nothing", write, i, (*got)[0])
					case s.applied != nil && len(*got) != 1:
						t.Fatalf("write=%v step %d: applied %v, want %v", write, i, *got, *s.applied)
					case s.applied != nil && !(*got)[0].Equal(*s.applied):
						t.Fatalf("write=%v step %d: applied %v, want %v", write, i, (*got)[0], *s.applied)
					}
					*got = nil
				}
			}
		})
	}
}

func TestDeadlineConnSetDeadlineSetsBoth(t *testing.T) {
	rc := &recordingConn{}
	c := &deadlineConn{Conn: rc, slack: time.Second}
	d := time.Now().Add(time.Minute)
	_ = c.SetDeadline(d)
	_, _ = c.Read(nil)
	_, _ = c.Write(nil)
	if len(rc.reads) != 1 || !rc.reads[0].Equal(d) || len(rc.writes) != 1 || !rc.writes[0].Equal(d) {
		t.Fatalf("reads %v writes %v, want %v for both", rc.reads, rc.writes, d)
	}
}

func TestTimeoutsSlack(t *testing.T) {
	cases := []struct {
		in   Timeouts
		want time.Duration
	}{
		{Timeouts{}, time.Second},
		{Timeouts{Read: 2 * time.Second}, 250 * time.Millisecond},
		{Timeouts{Write: 800 * time.Millisecond, Idle: time.Hour}, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := tc.in.withDefaults().slack(); got != tc.want {
			t.Errorf("%+v: slack %v, want %v", tc.in, got, tc.want)
		}
	}
}
