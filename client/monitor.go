package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CheckpointStore keeps the last checkpoint a Monitor verified, as the
// signed note text.
type CheckpointStore interface {
	// Load returns the saved note, or nil and no error when there is none.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the saved note.
	Save(ctx context.Context, note []byte) error
}

// FileStore is a CheckpointStore in one file, replaced atomically (a
// temporary file in the same directory, renamed over it).
type FileStore struct{ Path string }

// Load reads the file; a missing file is no checkpoint yet.
func (f FileStore) Load(context.Context) ([]byte, error) {
	st, err := os.Stat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("monitor state: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxCheckpoint {
		return nil, fmt.Errorf("monitor state %s: not a regular file of at most %d bytes", f.Path, maxCheckpoint)
	}
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("monitor state: %w", err)
	}
	return b, nil
}

// Save writes note to the file atomically.
func (f FileStore) Save(_ context.Context, note []byte) error {
	dir := filepath.Dir(f.Path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".*")
	if err != nil {
		return fmt.Errorf("monitor state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(note); err != nil {
		tmp.Close()
		return fmt.Errorf("monitor state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("monitor state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("monitor state: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return fmt.Errorf("monitor state: %w", err)
	}
	return nil
}

// MemoryStore is a CheckpointStore in memory (tests, or a caller that
// persists elsewhere). Not safe for concurrent use.
type MemoryStore struct{ Note []byte }

// Load returns the saved note.
func (m *MemoryStore) Load(context.Context) ([]byte, error) { return m.Note, nil }

// Save keeps note.
func (m *MemoryStore) Save(_ context.Context, note []byte) error {
	m.Note = append([]byte(nil), note...)
	return nil
}

// ForkError is a checkpoint that does not extend the one a Monitor saw
// before: the log forked (two trees for one history) or rolled back (a
// smaller tree). Both signed notes are the evidence: publish them. It
// matches ErrLogFork with errors.Is.
type ForkError struct {
	// Kind is "rollback" (the tree shrank) or "fork" (same size, another
	// root hash; or no valid consistency proof).
	Kind     string
	Previous *Checkpoint
	Current  *Checkpoint
	// Err is the consistency failure, when there is one.
	Err error
}

func (e *ForkError) Error() string {
	msg := fmt.Sprintf("log %s: checkpoint of %d leaves (%s) does not extend the checkpoint of %d leaves (%s) seen before",
		e.Kind, e.Current.Size, e.Current.Hash, e.Previous.Size, e.Previous.Hash)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrLogFork) true.
func (e *ForkError) Is(target error) bool { return target == ErrLogFork }

// Unwrap is the consistency failure.
func (e *ForkError) Unwrap() error { return e.Err }

// Monitor watches one log: each Check fetches the latest checkpoint,
// verifies its signature, proves it extends the last one it saw (with a
// consistency proof from the service) and saves it. A checkpoint that does
// not extend the last is a *ForkError and is not saved, so every later
// Check compares against the last good one again.
type Monitor struct {
	Client   *Client
	Verifier *LogVerifier
	// Store keeps the last checkpoint between runs (required).
	Store CheckpointStore
}

// MonitorResult is one successful Check.
type MonitorResult struct {
	// Previous is the checkpoint seen before (nil on the first check).
	Previous *Checkpoint
	Current  *Checkpoint
	// Proved is true when a consistency proof was fetched and verified
	// (false on the first check and when the tree did not change).
	Proved bool
}

// Check runs one round (see Monitor).
func (m *Monitor) Check(ctx context.Context) (*MonitorResult, error) {
	if m.Client == nil || m.Verifier == nil || m.Store == nil {
		return nil, errors.New("monitor: Client, Verifier and Store are required")
	}
	var prev *Checkpoint
	saved, err := m.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	if len(saved) > 0 {
		if prev, err = m.Verifier.OpenCheckpoint(saved); err != nil {
			return nil, fmt.Errorf("monitor: the saved checkpoint does not verify with this key (a rotated key starts a new state): %w", err)
		}
	}
	text, err := m.Client.LogCheckpoint(ctx, m.Verifier.Origin())
	if err != nil {
		return nil, err
	}
	cur, err := m.Verifier.OpenCheckpoint(text)
	if err != nil {
		return nil, err
	}
	res := &MonitorResult{Previous: prev, Current: cur}
	if prev != nil {
		if err := m.extends(ctx, prev, cur, res); err != nil {
			return nil, err
		}
	}
	if prev == nil || cur.Size > prev.Size {
		if err := m.Store.Save(ctx, cur.Note); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// extends proves cur extends prev, or says how it does not.
func (m *Monitor) extends(ctx context.Context, prev, cur *Checkpoint, res *MonitorResult) error {
	switch {
	case cur.Size < prev.Size:
		return &ForkError{Kind: "rollback", Previous: prev, Current: cur}
	case cur.Size == prev.Size:
		if cur.Hash != prev.Hash {
			return &ForkError{Kind: "fork", Previous: prev, Current: cur}
		}
		return nil
	case prev.Size == 0:
		return nil
	}
	p, err := m.Client.LogConsistency(ctx, prev.Size, cur.Size)
	if err != nil {
		if errors.Is(err, ErrConsistencyProof) {
			return &ForkError{Kind: "fork", Previous: prev, Current: cur, Err: err}
		}
		return err
	}
	if err := VerifyConsistency(prev, cur, p.Proof); err != nil {
		return &ForkError{Kind: "fork", Previous: prev, Current: cur, Err: err}
	}
	res.Proved = true
	return nil
}

// Watch runs Check now and then every interval until ctx ends, handing
// each outcome to report; it stops early when report returns false, and
// returns ctx's error or nil.
func (m *Monitor) Watch(ctx context.Context, interval time.Duration, report func(*MonitorResult, error) bool) error {
	if interval <= 0 {
		return errors.New("monitor: interval must be positive")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if !report(m.Check(ctx)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
