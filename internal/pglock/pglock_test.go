package pglock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/pglock"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// campaigner runs one Lock.Run and reports its terms on channels.
type campaigner struct {
	elected chan int32    // the connection's backend pid, at each term
	waited  chan error    // each failed try
	lost    chan error    // each lost term
	done    chan struct{} // closed when Run returns
	err     error         // Run's answer, once done
	cancel  context.CancelFunc
}

func campaign(t *testing.T, cc *pgx.ConnConfig, key int64) *campaigner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &campaigner{elected: make(chan int32, 8), waited: make(chan error, 1000),
		lost: make(chan error, 8), done: make(chan struct{}), cancel: cancel}
	l := pglock.Lock{Name: "test lock", Key: key, Conn: cc, Retry: 20 * time.Millisecond}
	go func() {
		defer close(c.done)
		c.err = l.Run(ctx, pglock.Campaign{
			Term: func(ctx context.Context, conn *pgx.Conn) error {
				c.elected <- int32(conn.PgConn().PID())
				return pglock.Watch(ctx, conn)
			},
			Waiting: func(err error) {
				select {
				case c.waited <- err:
				default:
				}
			},
			Lost: func(err error) { c.lost <- err },
		})
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func connConfig(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	cc, err := pgx.ParseConfig(testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestTakeover: of two campaigners one leads and the other stands by;
// the standby takes over when the leader's connection is killed (the
// leader's Watch sees it, its term is lost and it campaigns again) and
// again when the new leader's campaign ends.
func TestTakeover(t *testing.T) {
	cc := connConfig(t)
	const key = 0x7465_7374_6c6f_636b
	a := campaign(t, cc, key)
	pidA := recv(t, a.elected, "first election")
	b := campaign(t, cc, key)
	if err := recv(t, b.waited, "standby try"); err != nil {
		t.Fatalf("standby try: %v, want nil (lock busy)", err)
	}
	select {
	case <-b.elected:
		t.Fatal("both campaigners lead")
	default:
	}

	admin, err := pgx.ConnectConfig(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pidA); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, a.lost, "lost term"); !errors.Is(err, pglock.ErrLost) {
		t.Fatalf("lost term: %v, want ErrLost", err)
	}
	recv(t, b.elected, "takeover by the standby")

	// The new leader's campaign ends: its connection closes and the first
	// campaigner, campaigning again, leads.
	b.cancel()
	recv(t, b.done, "end of campaign")
	if b.err != nil {
		t.Fatalf("Run after cancel: %v, want nil", b.err)
	}
	recv(t, a.elected, "takeover by the first campaigner")
}

func TestRun(t *testing.T) {
	cc := connConfig(t)
	bad := cc.Copy()
	bad.Host, bad.Port = "127.0.0.1", 1 // nothing listens there
	bad.ConnectTimeout = time.Second
	stop := errors.New("stop")
	for _, tc := range []struct {
		name    string
		conn    *pgx.ConnConfig
		term    error
		fatal   bool
		cancel  bool // cancel ctx in the first Waiting or Term
		want    error
		waitErr string
	}{
		{name: "fatal term ends the campaign", conn: cc, term: stop, fatal: true, want: stop},
		{name: "ended ctx answers nil", conn: cc, term: stop, cancel: true},
		{name: "connect failure is heard and retried", conn: bad, cancel: true, waitErr: "connect for test lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var terms atomic.Int32
			var waitErr error
			l := pglock.Lock{Name: "test lock", Key: time.Now().UnixNano(), Conn: tc.conn, Retry: 10 * time.Millisecond}
			err := l.Run(ctx, pglock.Campaign{
				Term: func(context.Context, *pgx.Conn) error {
					terms.Add(1)
					if tc.cancel {
						cancel()
					}
					return tc.term
				},
				Waiting: func(err error) {
					waitErr = err
					if tc.cancel {
						cancel()
					}
				},
				Fatal: func(err error) bool { return tc.fatal && errors.Is(err, stop) },
			})
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
			if tc.waitErr != "" {
				if waitErr == nil || !strings.Contains(waitErr.Error(), tc.waitErr) {
					t.Fatalf("Waiting heard %v, want %q", waitErr, tc.waitErr)
				}
				if terms.Load() != 0 {
					t.Fatal("a term without the lock")
				}
			} else if terms.Load() != 1 {
				t.Fatalf("%d terms, want 1", terms.Load())
			}
		})
	}
}
