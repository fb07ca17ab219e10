package stream

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/store"
)

// stream is one client's stream, on the connection it took over.
type stream struct {
	h      *Handler
	conn   net.Conn
	tcp    *net.TCPConn
	filter store.StreamFilter
	pos    uint64 // the last log row this client was given (or skipped)
	// The write buffer, from bufPool, while the stream has something to
	// write (nil while it waits: an idle stream holds no buffer). Its
	// capacity is charged to the node's budget.
	bp      *[]byte
	buf     []byte
	charged int64
	// holds mirrors the bytes of the budget the stream holds (its buffer
	// and a catch-up's room); writing is when its current write began
	// (unix ns, 0 outside writes); evicted says makeRoom cut its write.
	// Other streams read them to find what to evict.
	holds   atomic.Int64
	writing atomic.Int64
	evicted atomic.Bool
	// chunked: the body is sent in chunks (HTTP/1.1); otherwise as is,
	// ended by closing the connection (HTTP/1.0).
	chunked bool
}

// run streams until the client goes, the lifetime ends, the node drains
// or a write fails; it returns why it ended.
func (s *stream) run(head, fail []byte) (why endReason) {
	if s.tcp != nil {
		_ = s.tcp.SetWriteBuffer(sendBuffer)
	}
	gone, stopWatching := s.watchClient()
	defer stopWatching()
	defer s.release()
	if why, ended := s.open(head, fail); ended {
		return why
	}
	return s.follow(gone)
}

// watchClient notices the client closing (a stream's request has no body
// to read): gone is closed then. stop wakes the reader and waits for it
// (fasthttp reuses its buffer once the handler returns).
func (s *stream) watchClient() (gone <-chan struct{}, stop func()) {
	closed := make(chan struct{})
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		defer close(closed)
		var b [128]byte
		for {
			if _, err := s.conn.Read(b[:]); err != nil {
				return
			}
		}
	}()
	return closed, func() {
		if s.tcp != nil {
			_ = s.tcp.SetReadDeadline(time.Now())
		} else {
			_ = s.conn.Close()
		}
		reader.Wait()
	}
}

// open writes the response head and the retry advice, and for a stream
// refused at its start the error event; ended says the stream is over
// already (why).
func (s *stream) open(head, fail []byte) (why endReason, ended bool) {
	if err := s.writeRaw(head); err != nil {
		return s.failed(err), true
	}
	if err := s.add(retryFrame); err != nil {
		return s.failed(err), true
	}
	if fail != nil {
		if err := s.add(fail); err != nil {
			return s.failed(err), true
		}
		_ = s.flush()
		s.end()
		return endError, true
	}
	if err := s.flush(); err != nil {
		return s.failed(err), true
	}
	return "", false
}

// follow sends the hub's events after the stream's position (catching up
// from PostgreSQL when it fell behind the ring) and a heartbeat when it
// is idle, until the stream ends; it returns why.
func (s *stream) follow(gone <-chan struct{}) endReason {
	cfg := s.h.cfg
	// Streams opened together (a node's restart) do not all end together.
	life := time.NewTimer(cfg.Lifetime - time.Duration(rand.Int64N(int64(cfg.Lifetime/10)+1)))
	defer life.Stop()
	hb := time.NewTimer(cfg.Heartbeat)
	defer hb.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		evs, last, covered, changed := s.h.hub.since(s.pos, 512)
		switch {
		case !covered:
			if err := s.catchUp(ctx, last, gone); err != nil {
				return s.failed(err)
			}
		case len(evs) > 0:
			if err := s.send(evs); err != nil {
				return s.failed(err)
			}
		default:
			why, ended, err := s.idle(changed, hb, life.C, gone)
			if err != nil {
				return s.failed(err)
			}
			if ended {
				return why
			}
		}
		if why, ended := s.ending(life.C, gone); ended {
			return why
		}
	}
}

// send writes the events the stream's filter matches, flushing as the
// buffer fills, and moves the stream's position past them.
func (s *stream) send(evs []*Event) error {
	for _, e := range evs {
		if !e.matches(s.filter) {
			continue
		}
		if err := s.add(e.Frame); err != nil {
			return err
		}
		s.h.m.sent.Inc()
		if s.pending() >= flushAt {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	s.pos = evs[len(evs)-1].Seq
	return nil
}

// idle flushes what is pending, lets go of the stream's buffer and waits
// for the next event, sending a heartbeat when none comes in time; ended
// says the stream is over (why).
func (s *stream) idle(changed <-chan struct{}, hb *time.Timer, life <-chan time.Time, gone <-chan struct{}) (why endReason, ended bool, err error) {
	every := s.h.cfg.Heartbeat
	if s.pending() > 0 {
		if err := s.flush(); err != nil {
			return "", false, err
		}
		hb.Reset(every)
	}
	s.release() // nothing to write until the next event
	select {
	case <-changed:
	case <-hb.C:
		if err := s.add(heartbeat); err != nil {
			return "", false, err
		}
		if err := s.flush(); err != nil {
			return "", false, err
		}
		hb.Reset(every)
	case <-life:
		s.end()
		return endLifetime, true, nil
	case <-s.h.hub.closing:
		s.end()
		return endDrain, true, nil
	case <-gone:
		return endClient, true, nil
	}
	return "", false, nil
}

// ending says whether the stream ends now, between batches (a busy stream
// still ends on these), and why, having flushed what it could.
func (s *stream) ending(life <-chan time.Time, gone <-chan struct{}) (why endReason, ended bool) {
	select {
	case <-s.h.hub.closing:
		_ = s.flush()
		s.end()
		return endDrain, true
	case <-life:
		_ = s.flush()
		s.end()
		return endLifetime, true
	case <-gone:
		return endClient, true
	default:
		return "", false
	}
}

var (
	errGone    = errors.New("client gone")
	errDrained = errors.New("draining")
)

// failed says why a stream ended on err.
func (s *stream) failed(err error) endReason {
	switch {
	case errors.Is(err, errDrained):
		s.end()
		return endDrain
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.h.m.dropped.Inc()
		return endSlow
	case errors.Is(err, errGone):
		return endClient
	case errors.Is(err, errBufferFull):
		s.shed()
		return endBudget
	case errors.Is(err, errEvicted):
		return endBudget // its client takes nothing: no event would reach it
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s.h.m.dropped.Inc()
		return endSlow
	}
	if _, ok := err.(writeError); ok {
		return endClient
	}
	s.h.hub.log.Warn("stream: ended on an error", "err", err)
	return endError
}

// endReason is why a stream ended, as attestd_stream_ended_total{why}
// names it.
type endReason string

const (
	endClient   endReason = "client"   // the client went away
	endLifetime endReason = "lifetime" // its lifetime ran out (the client resumes)
	endDrain    endReason = "drain"    // the node drains
	endSlow     endReason = "slow"     // the client could not keep up
	endBudget   endReason = "budget"   // the node's stream buffer budget was full
	endError    endReason = "error"    // another error event
)
