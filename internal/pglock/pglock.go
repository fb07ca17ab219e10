package pglock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/internal/pause"
	"github.com/jackc/pgx/v5"
)

// ErrLost is wrapped by Watch's error when the lock's connection stops
// answering: the lock is gone and the leader must stop.
var ErrLost = errors.New("lock connection lost")

// Lock is one advisory lock and how to campaign for it.
type Lock struct {
	// Name names the lock in errors ("writer lock", "the appender lock").
	Name string
	// Key is the advisory lock's key.
	Key int64
	// Conn configures the dedicated connection (copied on each connect).
	Conn *pgx.ConnConfig
	// Retry is the pause between tries and after a lost term.
	Retry time.Duration
}

// Campaign says what a campaigner does around its terms. Only Term is
// required.
type Campaign struct {
	// Term leads while the lock is held, on conn (the lock's connection,
	// for Watch). It returns when ctx ends or the term must end.
	Term func(ctx context.Context, conn *pgx.Conn) error
	// Waiting hears each failed try: err is nil when another session
	// holds the lock, the connect or query error otherwise.
	Waiting func(err error)
	// Fatal reports whether a term's error ends the campaign (it is
	// returned then, even when ctx has ended).
	Fatal func(err error) bool
	// Lost hears a term's error when the campaign goes on (ctx alive),
	// before the Retry pause.
	Lost func(err error)
}

// Run campaigns until ctx ends (it returns nil then) or a term's error
// is Fatal. The lock's connection is closed after each term, within 2 s.
func (l Lock) Run(ctx context.Context, c Campaign) error {
	for {
		conn, err := l.Acquire(ctx, c.Waiting)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		err = c.Term(ctx, conn)
		Close(conn)
		if c.Fatal != nil && c.Fatal(err) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.Lost != nil {
			c.Lost(err)
		}
		if !pause.For(ctx, l.Retry) {
			return nil
		}
	}
}

// Acquire opens a dedicated connection and waits until it holds the
// session-level advisory lock; it returns ctx's error when ctx ends
// first. waiting (nil: none) hears each failed try (see Campaign).
func (l Lock) Acquire(ctx context.Context, waiting func(err error)) (*pgx.Conn, error) {
	for {
		conn, err := l.try(ctx)
		if conn != nil {
			return conn, nil
		}
		if waiting != nil && ctx.Err() == nil {
			waiting(err)
		}
		if !pause.For(ctx, l.Retry) {
			return nil, ctx.Err()
		}
	}
}

// try connects and tries the lock once: (nil, nil) when another session
// holds it.
func (l Lock) try(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.Conn.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect for %s: %w", l.Name, err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.Key).Scan(&ok); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("try %s: %w", l.Name, err)
	}
	if !ok {
		_ = conn.Close(ctx)
		return nil, nil
	}
	return conn, nil
}

// Watch pings the lock's connection every second until ctx ends (it
// returns ctx's error) or a ping fails (an error wrapping ErrLost).
func Watch(ctx context.Context, conn *pgx.Conn) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("%w: %w", ErrLost, err)
		}
	}
}

// Close closes the lock's connection, which releases the lock, within 2 s.
func Close(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
