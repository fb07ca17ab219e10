package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// StreamParams select and position a live stream (GET /attestations/stream).
type StreamParams struct {
	AgentPDA   string // only this agent's attestations
	ActionType string // only this action type
	// ActionHash (64 hex characters) and TxSignature (base58) keep the
	// events of one payload hash or one transaction, as ListParams.
	ActionHash  string
	TxSignature string
	// After resumes after this cursor: an attestation event's id, or a
	// list's pagination.nextCursor. Empty: live from now.
	After string
	// Idle is how long a stream may stay silent (no event, no heartbeat)
	// before the client reconnects (a half-open connection). Zero: 45 s,
	// three of the server's default heartbeats.
	Idle time.Duration
	// MaxBackoff caps the delay between failed reconnections (zero: 30 s).
	MaxBackoff time.Duration
	// MaxRetryAfter caps the wait a 429 or 503's Retry-After asks for
	// (zero: 5 minutes): a stream reconnects at least that often.
	MaxRetryAfter time.Duration
}

// Kinds of StreamEvent.
const (
	StreamAttestation = "attestation" // a new attestation
	StreamCommitment  = "commitment"  // an attestation became finalized
	StreamRemoved     = "removed"     // a fork removed a confirmed attestation
)

// StreamEvent is one event of a live stream.
type StreamEvent struct {
	Type string // StreamAttestation, StreamCommitment or StreamRemoved
	// ID is the attestation's list cursor (attestation events only): the
	// position the client resumes after.
	ID string
	// Attestation is the list item (attestation and commitment events).
	Attestation *Attestation
	// Removed names the removed attestation (removed events).
	Removed *RemovedAttestation
}

// RemovedAttestation names an attestation a fork removed.
type RemovedAttestation struct {
	PDA         string `json:"pda"`
	TxSignature string `json:"txSignature"`
}

// maxEventBytes bounds one event as the client reads it.
const maxEventBytes = 1 << 20

// errStreamEnded: the server ended the stream cleanly (its lifetime, a
// drain): reconnect after the retry delay.
var errStreamEnded = errors.New("stream ended")

// StreamBufferFull is the code of the one error event a stream resumes
// from: the server held the most it buffers for streams and ended this
// one. Stream reconnects with the last id, backing off as after a failure.
const StreamBufferFull = "STREAM_BUFFER_FULL"

// errStreamShed: the server ended the stream with a StreamBufferFull
// error event.
var errStreamShed = errors.New("stream ended by the server: its stream buffers are full")

// Stream follows the live stream, calling handler for each event in
// order, until ctx ends (it then returns ctx's error), handler returns an
// error (returned as is), or the server refuses the stream for good: a 4xx
// other than 408 and 429, or an error event (a cursor too old or unknown:
// CURSOR_TOO_OLD, CURSOR_UNKNOWN), both as *APIError. When the stream
// ends, its connection fails, or the server ends it with a
// StreamBufferFull error event, Stream reconnects with the id of the last
// attestation event (Last-Event-ID), after the delay the server announced
// (retry:), backing off while reconnections fail; 429 and 503 wait their
// Retry-After (at most MaxRetryAfter). Events are neither lost nor repeated across reconnections
// (commitment and removed events may repeat: they are idempotent).
func (c *Client) Stream(ctx context.Context, p StreamParams, handler func(StreamEvent) error) error {
	if p.Idle <= 0 {
		p.Idle = 45 * time.Second
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 5 * time.Minute
	}
	retry := 2 * time.Second
	last := p.After
	failures := 0
	for {
		s := &streamRun{c: c, p: p, last: last, retry: retry, handler: handler}
		err := s.run(ctx)
		last, retry = s.last, s.retry
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var wait time.Duration
		var ae *APIError
		var he handlerError
		switch {
		case errors.As(err, &he):
			return he.err
		case errors.As(err, &ae) && ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusRequestTimeout && ae.Status < 500:
			return err // refused for good (4xx, or an error event: Status 0)
		case errors.As(err, &ae) && ae.RetryAfter > 0:
			wait = min(ae.RetryAfter, p.MaxRetryAfter)
			failures++
		case errors.Is(err, errStreamEnded) || s.delivered:
			failures, wait = 0, retry
		default:
			failures++
			wait = min(p.MaxBackoff, retry<<min(failures-1, 10))
			wait = wait/2 + rand.N(wait/2+1) // jitter: a fleet of clients does not reconnect in step
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// handlerError carries the handler's error out of a run.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

// streamRun is one connection of a Stream.
type streamRun struct {
	c         *Client
	p         StreamParams
	last      string
	retry     time.Duration
	handler   func(StreamEvent) error
	delivered bool
}

// streamPath is the stream's route.
const streamPath = "/attestations/stream"

// run is one connection: it opens the stream after s.last and dispatches
// its events until it ends, fails or goes silent for longer than Idle.
func (s *streamRun) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := s.request(ctx)
	if err != nil {
		return fmt.Errorf("attestd client: GET %s: %w", streamPath, err)
	}
	// The answer's headers within the client's timeout; then silence for
	// no longer than Idle.
	watchdog := time.AfterFunc(s.c.timeout, cancel)
	defer watchdog.Stop()
	res, err := s.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("attestd client: GET %s: %w", streamPath, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return newAPIError(http.MethodGet, streamPath, res.StatusCode, res.Header, body)
	}
	watchdog.Reset(s.p.Idle)
	return s.read(bufio.NewReaderSize(res.Body, 16<<10), watchdog)
}

// request is the stream's GET: its filters in the query, the id of the
// last attestation event given (Last-Event-ID), the client's headers.
func (s *streamRun) request(ctx context.Context) (*http.Request, error) {
	q := url.Values{}
	if s.p.AgentPDA != "" {
		q.Set("agentPda", s.p.AgentPDA)
	}
	if s.p.ActionHash != "" {
		q.Set("actionHash", s.p.ActionHash)
	}
	if s.p.TxSignature != "" {
		q.Set("txSignature", s.p.TxSignature)
	}
	if s.p.ActionType != "" {
		q.Set("actionType", s.p.ActionType)
	}
	target := s.c.base + streamPath
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-store")
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	if s.c.userAgent != "" {
		req.Header.Set("User-Agent", s.c.userAgent)
	}
	if s.c.apiKey != "" {
		req.Header.Set(APIKeyHeader, s.c.apiKey)
	}
	return req, nil
}

// sseEvent is the event being read: its fields so far.
type sseEvent struct {
	typ, id string
	data    bytes.Buffer
}

// read parses the event stream from br, dispatching each event at its
// blank line, until the stream ends (errStreamEnded) or fails; each line
// puts the watchdog off for Idle.
func (s *streamRun) read(br *bufio.Reader, watchdog *time.Timer) error {
	var ev sseEvent
	for {
		line, err := readLine(br)
		if err == io.EOF {
			return errStreamEnded
		}
		if err != nil {
			return fmt.Errorf("attestd client: GET %s: read: %w", streamPath, err)
		}
		watchdog.Reset(s.p.Idle)
		if len(line) == 0 { // dispatch
			if ev.data.Len() > 0 || ev.typ != "" {
				if err := s.dispatch(ev.typ, ev.id, ev.data.Bytes()); err != nil {
					return err
				}
			}
			ev.typ, ev.id = "", ""
			ev.data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		if err := s.field(&ev, line); err != nil {
			return err
		}
	}
}

// field records one field line of the event being read (retry: sets the
// reconnection delay); fields this client does not know are ignored.
func (s *streamRun) field(ev *sseEvent, line []byte) error {
	field, value, _ := bytes.Cut(line, []byte{':'})
	value = bytes.TrimPrefix(value, []byte{' '})
	switch string(field) {
	case "event":
		ev.typ = string(value)
	case "id":
		ev.id = string(value)
	case "data":
		if ev.data.Len()+len(value) > maxEventBytes {
			return fmt.Errorf("attestd client: GET %s: an event larger than %d bytes", streamPath, maxEventBytes)
		}
		if ev.data.Len() > 0 {
			ev.data.WriteByte('\n')
		}
		ev.data.Write(value)
	case "retry":
		if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 && ms <= 600_000 {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

// dispatch decodes one event and gives it to the handler; an error
// event ends the run (as an *APIError, or errStreamShed for
// StreamBufferFull). Types this client does not know are skipped.
func (s *streamRun) dispatch(typ, id string, data []byte) error {
	ev := StreamEvent{Type: typ}
	switch typ {
	case StreamAttestation, StreamCommitment:
		ev.Attestation = new(Attestation)
		if err := json.Unmarshal(data, ev.Attestation); err != nil {
			return fmt.Errorf("attestd client: GET %s: decode %s event: %w", streamPath, typ, err)
		}
		if typ == StreamAttestation {
			ev.ID = id
		}
	case StreamRemoved:
		ev.Removed = new(RemovedAttestation)
		if err := json.Unmarshal(data, ev.Removed); err != nil {
			return fmt.Errorf("attestd client: GET %s: decode removed event: %w", streamPath, err)
		}
	case "error":
		e := newAPIError(http.MethodGet, streamPath, 0, nil, data)
		if e.Code == StreamBufferFull {
			return errStreamShed
		}
		return e
	default:
		return nil // a type this client does not know yet
	}
	if err := s.handler(ev); err != nil {
		return handlerError{err}
	}
	s.delivered = true
	if ev.ID != "" {
		s.last = ev.ID
	}
	return nil
}

// readLine reads one line (without its LF or CRLF), at most maxEventBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > maxEventBytes+2 {
			return nil, fmt.Errorf("a line longer than %d bytes", maxEventBytes)
		}
		out = append(out, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(out) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		out = bytes.TrimSuffix(out[:len(out)-1], []byte{'\r'})
		return out, nil
	}
}
