package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// What a database knows of coming back from a backup (migration 0025,
// docs/operations.md, Restore): the size the log's witnesses cosigned,
// below which no checkpoint is served, the hold `attestd restore` puts on
// the log until the appender has asked them, and the backups taken.

// LogHold is where the log stands against what its witnesses cosigned.
type LogHold struct {
	Size int64 // the log's size now
	// WitnessedSize is the size the log must regrow to after a restore:
	// the largest one a witness said it cosigned, when the appender found
	// the log smaller at the start of its term. No checkpoint smaller is
	// served. (In a log that was never behind it is 0, or a past
	// regrowth's size, which every checkpoint served since exceeds.)
	WitnessedSize int64
	HeldSince     time.Time // zero: not held (set by a restore until the witnesses are asked)
}

// Regrowing reports whether the log is held or below its witnessed size.
func (h LogHold) Regrowing() bool { return !h.HeldSince.IsZero() || h.Size < h.WitnessedSize }

// ReadLogHold reads the log's size, its witnessed size and its hold.
func (s *Store) ReadLogHold(ctx context.Context) (LogHold, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var h LogHold
	var since *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT size FROM log_size), witnessed_size, held_since FROM log_order`).
		Scan(&h.Size, &h.WitnessedSize, &since); err != nil {
		return LogHold{}, fmt.Errorf("read log hold: %w", err)
	}
	if since != nil {
		h.HeldSince = *since
	}
	return h, nil
}

// RaiseLogWitnessedSize records the size the log must regrow to (a
// witness cosigned it); it only grows.
func (s *Store) RaiseLogWitnessedSize(ctx context.Context, size int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE log_order SET witnessed_size = GREATEST(witnessed_size, $1)`, size); err != nil {
		return fmt.Errorf("raise log witnessed size: %w", err)
	}
	return nil
}

// HoldLog stops every node from serving a checkpoint until the appender
// has asked the witnesses what they cosigned (ReleaseLogHold): what
// `attestd restore` does to the database it restored.
func (s *Store) HoldLog(ctx context.Context) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE log_order SET held_since = COALESCE(held_since, now())`); err != nil {
		return fmt.Errorf("hold log: %w", err)
	}
	return nil
}

// ReleaseLogHold ends a restore's hold, once the witnesses' sizes are
// recorded (RaiseLogWitnessedSize): from then on the witnessed size alone
// keeps older checkpoints unserved.
func (s *Store) ReleaseLogHold(ctx context.Context) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE log_order SET held_since = NULL`); err != nil {
		return fmt.Errorf("release log hold: %w", err)
	}
	return nil
}

// Backup is one backup `attestd backup` took.
type Backup struct {
	StartedAt, FinishedAt time.Time
	File                  string
	Bytes                 int64
	LogSize               int64
	ChainSlot             uint64
}

// backupMarks selects what a backup records of the database: the log's
// size and the newest slot indexed.
const backupMarks = `(SELECT size FROM log_size), COALESCE((SELECT max(slot) FROM attestations), 0)`

// BackupSnapshot is a snapshot of the database a dump is taken in
// (pg_dump --snapshot), and what a backup records of it: the log's size
// and the newest slot indexed, read in the same snapshot. Release ends it
// once the dump is done.
type BackupSnapshot struct {
	ID      string
	LogSize int64
	Slot    uint64
	Release func()
}

// ExportBackupSnapshot opens a read-only repeatable-read transaction,
// exports its snapshot and reads the backup's marks in it.
func (s *Store) ExportBackupSnapshot(ctx context.Context) (BackupSnapshot, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return BackupSnapshot{}, fmt.Errorf("backup snapshot: %w", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return BackupSnapshot{}, fmt.Errorf("backup snapshot: %w", err)
	}
	b := BackupSnapshot{Release: func() { _ = tx.Rollback(context.Background()); conn.Release() }}
	var sl int64
	if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot(), `+backupMarks).
		Scan(&b.ID, &b.LogSize, &sl); err != nil {
		b.Release()
		return BackupSnapshot{}, fmt.Errorf("backup snapshot: %w", err)
	}
	b.Slot = uint64(sl)
	return b, nil
}

// BackupMark is what a backup records of the database now: the log's
// size and the newest slot indexed.
func (s *Store) BackupMark(ctx context.Context) (logSize int64, slot uint64, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var sl int64
	if err := s.pool.QueryRow(ctx, `SELECT `+backupMarks).
		Scan(&logSize, &sl); err != nil {
		return 0, 0, fmt.Errorf("read backup mark: %w", err)
	}
	return logSize, uint64(sl), nil
}

// RecordBackup records a backup whose dump is complete.
func (s *Store) RecordBackup(ctx context.Context, b Backup) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `INSERT INTO backups (started_at, finished_at, file, bytes, log_size, chain_slot)
		VALUES ($1, $2, $3, $4, $5, $6)`, b.StartedAt, b.FinishedAt, b.File, b.Bytes, b.LogSize, int64(b.ChainSlot)); err != nil {
		return fmt.Errorf("record backup: %w", err)
	}
	return nil
}

// NewestBackup reads the newest backup recorded; ok is false when there
// is none.
func (s *Store) NewestBackup(ctx context.Context) (b Backup, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var slot int64
	err = s.pool.QueryRow(ctx, `SELECT started_at, finished_at, file, bytes, log_size, chain_slot FROM backups
		ORDER BY finished_at DESC, id DESC LIMIT 1`).Scan(&b.StartedAt, &b.FinishedAt, &b.File, &b.Bytes, &b.LogSize, &slot)
	if errors.Is(err, pgx.ErrNoRows) {
		return Backup{}, false, nil
	}
	if err != nil {
		return Backup{}, false, fmt.Errorf("read newest backup: %w", err)
	}
	b.ChainSlot = uint64(slot)
	return b, true, nil
}
