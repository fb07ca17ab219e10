package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// The transparency log's tables (migration 0013, docs/log.md): log_queue
// (finalized attestations waiting for a leaf, filled by triggers in the
// transaction of the finality change), log_leaves, log_hashes (the RFC
// 6962 stored hashes, numbered as tlog.StoredHashIndex), log_size and
// log_checkpoints.

// LogAppended is what one LogAppend did.
type LogAppended struct {
	Leaves  int   // leaves appended
	Dropped int   // queue rows dropped without a leaf (already logged, or no finalized row)
	Size    int64 // tree size after the append
}

// LogAppend appends up to max queued attestations to the log in one
// transaction: their leaves (attestation.LogLeaf of their API shape), the
// stored hashes the new leaves complete, the new size, and their removal
// from the queue. Appends are serial: each locks the one log_size row
// first, so two appenders (a leader change) never interleave, and a crash
// at any point leaves the transaction undone whole: no leaf is lost or
// doubled. The order is the queue's: slot, transaction signature, event
// index, pda, of the rows queued when the append starts, and only of
// slots at or below the log's frontier (AdvanceLogFrontier): every
// attestation of those slots is known and final, so the order is the
// chain's, whenever and in whatever order they were indexed.
func (s *Store) LogAppend(ctx context.Context, max int) (LogAppended, error) {
	var res LogAppended
	if max <= 0 {
		return res, errors.New("log append: max must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Duration(max)*time.Millisecond)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = LogAppended{}
		var size int64
		if err := tx.QueryRow(ctx, `SELECT size FROM log_size FOR UPDATE`).Scan(&size); err != nil {
			return fmt.Errorf("lock log size: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT q.pda, l.pda IS NOT NULL, a.pda IS NOT NULL AND a.finalized,
				COALESCE(a.agent_pda, ''), COALESCE(a.action_type, 0), COALESCE(a.action_hash, ''::bytea),
				COALESCE(a.tx_signature, ''), COALESCE(a.slot, 0), COALESCE(a.ts, 'epoch'::timestamptz)
			FROM log_queue q
			LEFT JOIN attestations a ON a.pda = q.pda
			LEFT JOIN log_leaves l ON l.pda = q.pda
			WHERE q.slot <= (SELECT frontier FROM log_order)
			ORDER BY q.slot, q.tx_signature, q.event_index, q.pda LIMIT $1`, max)
		if err != nil {
			return fmt.Errorf("read log queue: %w", err)
		}
		var taken []string
		var leaves []attestation.Attestation
		for rows.Next() {
			var a attestation.Attestation
			var logged, final bool
			var typ int16
			var hash []byte
			var slot int64
			var ts time.Time
			if err := rows.Scan(&a.PDA, &logged, &final, &a.AgentPDA, &typ, &hash, &a.TxSignature, &slot, &ts); err != nil {
				rows.Close()
				return fmt.Errorf("read log queue: %w", err)
			}
			taken = append(taken, a.PDA)
			if logged || !final {
				res.Dropped++
				continue
			}
			a.ActionType, a.ActionHash = attestation.ActionType(typ), hex.EncodeToString(hash)
			a.Slot, a.Timestamp, a.Commitment = uint64(slot), attestation.At(ts), attestation.Finalized
			leaves = append(leaves, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read log queue: %w", err)
		}
		if len(taken) == 0 {
			res.Size = size
			return nil
		}
		if len(leaves) > 0 {
			if err := appendLeaves(ctx, tx, size, leaves); err != nil {
				return err
			}
			size += int64(len(leaves))
			if _, err := tx.Exec(ctx, `UPDATE log_size SET size = $1`, size); err != nil {
				return fmt.Errorf("save log size: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM log_queue WHERE pda = ANY($1)`, taken); err != nil {
			return fmt.Errorf("dequeue logged attestations: %w", err)
		}
		res.Leaves, res.Size = len(leaves), size
		return nil
	})
	if err != nil {
		return LogAppended{}, fmt.Errorf("log append: %w", err)
	}
	return res, nil
}

// appendLeaves writes leaves at indexes size, size+1, ... with the stored
// hashes they complete. The hashes below size that the new ones build on
// are the roots of the complete subtrees of the tree of that size (its
// right edge), read in one query first; every other one is new.
func appendLeaves(ctx context.Context, tx pgx.Tx, size int64, leaves []attestation.Attestation) error {
	known := make(map[int64]tlog.Hash, 64+3*len(leaves))
	if edge := logEdge(size); len(edge) > 0 {
		hs, err := readHashes(ctx, tx, edge)
		if err != nil {
			return err
		}
		for i, id := range edge {
			known[id] = hs[i]
		}
	}
	r := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			h, ok := known[id]
			if !ok {
				return nil, fmt.Errorf("stored hash %d is neither on the edge of the tree of size %d nor new", id, size)
			}
			out[i] = h
		}
		return out, nil
	})
	leafRows := make([][]any, 0, len(leaves))
	hashRows := make([][]any, 0, 2*len(leaves)+1)
	for i, a := range leaves {
		n := size + int64(i)
		leaf, err := attestation.LogLeaf(a)
		if err != nil {
			return err
		}
		hs, err := tlog.StoredHashes(n, leaf, r)
		if err != nil {
			return fmt.Errorf("hash leaf %d: %w", n, err)
		}
		first := tlog.StoredHashIndex(0, n)
		for j, h := range hs {
			known[first+int64(j)] = h
			hashRows = append(hashRows, []any{first + int64(j), h[:]})
		}
		leafRows = append(leafRows, []any{n, a.PDA, leaf})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"log_leaves"}, []string{"idx", "pda", "leaf"}, pgx.CopyFromRows(leafRows)); err != nil {
		return fmt.Errorf("write log leaves: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"log_hashes"}, []string{"id", "hash"}, pgx.CopyFromRows(hashRows)); err != nil {
		return fmt.Errorf("write log hashes: %w", err)
	}
	return nil
}

// logEdge lists the stored hash indexes of the roots of the complete
// subtrees that make up the tree of size n, largest first.
func logEdge(n int64) []int64 {
	var out []int64
	var start int64
	for level := 62; level >= 0; level-- {
		if n&(1<<level) != 0 {
			out = append(out, tlog.StoredHashIndex(level, start>>level))
			start += 1 << level
		}
	}
	return out
}

// queryer is what reads the log's hashes: the pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readHashes reads the stored hashes ids, in their order, in one query.
func readHashes(ctx context.Context, q queryer, ids []int64) ([]tlog.Hash, error) {
	rows, err := q.Query(ctx, `SELECT id, hash FROM log_hashes WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read log hashes: %w", err)
	}
	got := make(map[int64]tlog.Hash, len(ids))
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read log hashes: %w", err)
		}
		if len(b) != tlog.HashSize {
			rows.Close()
			return nil, fmt.Errorf("read log hashes: hash %d has %d bytes", id, len(b))
		}
		got[id] = tlog.Hash(b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read log hashes: %w", err)
	}
	out := make([]tlog.Hash, len(ids))
	for i, id := range ids {
		h, ok := got[id]
		if !ok {
			return nil, fmt.Errorf("read log hashes: hash %d is not stored", id)
		}
		out[i] = h
	}
	return out, nil
}

// ReadLogHashes reads the log's stored hashes ids (tlog.StoredHashIndex
// numbering), in their order, in one query; every one must be stored.
func (s *Store) ReadLogHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return readHashes(ctx, s.pool, ids)
}

// LogHashReader is a tlog.HashReader over the log's stored hashes: each
// ReadHashes call is one query (the tlog proofs and tiles ask once).
func (s *Store) LogHashReader(ctx context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return s.ReadLogHashes(ctx, ids) })
}

// LogCheckpoint is one signed checkpoint of the log.
type LogCheckpoint struct {
	Origin   string
	Size     int64
	Root     tlog.Hash
	Note     string // the signed note text
	SignedAt time.Time
}

// LogSignCheckpoint signs a checkpoint of the log's current size for
// origin when the newest one stored for origin is of a smaller size (or
// there is none): sign gets the size and root hash and returns the signed
// note text. It reports whether it stored one; the checkpoint is the
// newest for origin either way (zero when there is none and sign failed).
func (s *Store) LogSignCheckpoint(ctx context.Context, origin string, sign func(size int64, root tlog.Hash) (string, error)) (LogCheckpoint, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var out LogCheckpoint
	var made bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		made = false
		var size int64
		// FOR SHARE: appends wait until this checkpoint is stored, so the
		// root is of hashes that no concurrent append is writing.
		if err := tx.QueryRow(ctx, `SELECT size FROM log_size FOR SHARE`).Scan(&size); err != nil {
			return fmt.Errorf("read log size: %w", err)
		}
		last, ok, err := latestCheckpoint(ctx, tx, origin)
		if err != nil {
			return err
		}
		if ok && last.Size >= size {
			out = last
			return nil
		}
		root, err := tlog.TreeHash(size, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return readHashes(ctx, tx, ids) }))
		if err != nil {
			return fmt.Errorf("root hash of size %d: %w", size, err)
		}
		text, err := sign(size, root)
		if err != nil {
			return err
		}
		var at time.Time
		if err := tx.QueryRow(ctx, `INSERT INTO log_checkpoints (origin, size, root, note) VALUES ($1, $2, $3, $4) RETURNING signed_at`,
			origin, size, root[:], text).Scan(&at); err != nil {
			return fmt.Errorf("store checkpoint: %w", err)
		}
		out, made = LogCheckpoint{Origin: origin, Size: size, Root: root, Note: text, SignedAt: at}, true
		return nil
	})
	if err != nil {
		return LogCheckpoint{}, false, fmt.Errorf("log checkpoint: %w", err)
	}
	return out, made, nil
}

type rowQueryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func latestCheckpoint(ctx context.Context, q rowQueryer, origin string) (LogCheckpoint, bool, error) {
	c := LogCheckpoint{Origin: origin}
	var root []byte
	err := q.QueryRow(ctx, `SELECT size, root, note, signed_at FROM log_checkpoints WHERE origin = $1 ORDER BY size DESC LIMIT 1`, origin).
		Scan(&c.Size, &root, &c.Note, &c.SignedAt)
	if err == pgx.ErrNoRows {
		return LogCheckpoint{}, false, nil
	}
	if err != nil {
		return LogCheckpoint{}, false, fmt.Errorf("read latest checkpoint: %w", err)
	}
	if len(root) != tlog.HashSize {
		return LogCheckpoint{}, false, fmt.Errorf("read latest checkpoint: root of %d bytes", len(root))
	}
	c.Root = tlog.Hash(root)
	return c, true, nil
}

// LatestLogCheckpoint reads the newest checkpoint signed for origin; ok
// is false when there is none.
func (s *Store) LatestLogCheckpoint(ctx context.Context, origin string) (LogCheckpoint, bool, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	return latestCheckpoint(ctx, s.pool, origin)
}

// LogCheckpoints lists the checkpoints signed for origin, oldest first,
// of sizes above after, at most limit.
func (s *Store) LogCheckpoints(ctx context.Context, origin string, after int64, limit int) ([]LogCheckpoint, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT size, root, note, signed_at FROM log_checkpoints WHERE origin = $1 AND size > $2
		ORDER BY size LIMIT $3`, origin, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LogCheckpoint, error) {
		c := LogCheckpoint{Origin: origin}
		var root []byte
		err := r.Scan(&c.Size, &root, &c.Note, &c.SignedAt)
		if err == nil && len(root) != tlog.HashSize {
			err = fmt.Errorf("checkpoint %d: root of %d bytes", c.Size, len(root))
		}
		copy(c.Root[:], root)
		return c, err
	})
}

// LogEntry is where an attestation stands in the log.
type LogEntry struct {
	Finalized   bool
	TxSignature string
	Slot        uint64
	Logged      bool   // it has a leaf
	Index       int64  // the leaf's index (when Logged)
	Leaf        []byte // the leaf bytes (when Logged)
}

// LogEntryOf reads where the attestation pda stands in the log;
// ErrNotFound when there is no such attestation.
func (s *Store) LogEntryOf(ctx context.Context, pda string) (LogEntry, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var e LogEntry
	var slot int64
	var idx *int64
	err := s.pool.QueryRow(ctx, `SELECT a.finalized, a.tx_signature, a.slot, l.idx, l.leaf
		FROM attestations a LEFT JOIN log_leaves l ON l.pda = a.pda WHERE a.pda = $1`, pda).
		Scan(&e.Finalized, &e.TxSignature, &slot, &idx, &e.Leaf)
	if err == pgx.ErrNoRows {
		return LogEntry{}, ErrNotFound
	}
	if err != nil {
		return LogEntry{}, fmt.Errorf("read log entry: %w", err)
	}
	e.Slot = uint64(slot)
	if idx != nil {
		e.Logged, e.Index = true, *idx
	}
	return e, nil
}

// LogIndexes maps each of pdas that has a leaf in the log to its leaf
// index (its position in the log, from 0), in one query; pdas without a
// leaf (unknown, not finalized yet, or finalized and waiting for the
// appender) are absent from the map. For callers that report, per
// attestation, whether and where it is in the log (premium bulk
// verification, the forensic report): an index below a checkpoint's size
// is provable against that checkpoint (GET /api/v1/attestations/{id}/proof).
// At most 10,000 pdas per call.
func (s *Store) LogIndexes(ctx context.Context, pdas []string) (map[string]int64, error) {
	if len(pdas) > 10000 {
		return nil, fmt.Errorf("log indexes: %d pdas, at most 10000", len(pdas))
	}
	out := make(map[string]int64, len(pdas))
	if len(pdas) == 0 {
		return out, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT pda, idx FROM log_leaves WHERE pda = ANY($1)`, pdas)
	if err != nil {
		return nil, fmt.Errorf("log indexes: %w", err)
	}
	for rows.Next() {
		var pda string
		var idx int64
		if err := rows.Scan(&pda, &idx); err != nil {
			rows.Close()
			return nil, fmt.Errorf("log indexes: %w", err)
		}
		out[pda] = idx
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("log indexes: %w", err)
	}
	return out, nil
}

// LogLeaves reads the leaves from index start, at most n of them, in
// index order.
func (s *Store) LogLeaves(ctx context.Context, start int64, n int) ([][]byte, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT leaf FROM log_leaves WHERE idx >= $1 AND idx < $2 ORDER BY idx`, start, start+int64(n))
	if err != nil {
		return nil, fmt.Errorf("read log leaves: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("read log leaves: %w", err)
	}
	return out, nil
}

// LogBacklog is how far the log is behind finality.
type LogBacklog struct {
	Size   int64         // leaves in the log
	Queued int64         // finalized attestations waiting for a leaf
	Oldest time.Duration // how long the oldest of them has waited (0: none)
}

// LogBacklog reads the log's size and queue.
func (s *Store) LogBacklog(ctx context.Context) (LogBacklog, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var b LogBacklog
	var oldest *float64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT size FROM log_size), (SELECT count(*) FROM log_queue),
		(SELECT extract(epoch FROM clock_timestamp() - min(queued_at))::float8 FROM log_queue)`).Scan(&b.Size, &b.Queued, &oldest)
	if err != nil {
		return LogBacklog{}, fmt.Errorf("read log backlog: %w", err)
	}
	if oldest != nil && *oldest > 0 {
		b.Oldest = time.Duration(*oldest * float64(time.Second))
	}
	return b, nil
}

// LogCosign stores a witness's cosignature of the checkpoint of origin
// and size (its signature line, verified by the caller), counts it on the
// checkpoint, and records the size as the witness's last, in one
// transaction. A cosignature stored already is not counted twice.
func (s *Store) LogCosign(ctx context.Context, origin string, size int64, witness, line string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO log_cosignatures (origin, size, witness, line) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, origin, size, witness, line)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if _, err := tx.Exec(ctx, `UPDATE log_checkpoints SET cosignatures = cosignatures + 1 WHERE origin = $1 AND size = $2`, origin, size); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO log_witnesses (origin, witness, size, cosigned_at) VALUES ($1, $2, $3, now())
			ON CONFLICT (origin, witness) DO UPDATE SET size = greatest(log_witnesses.size, EXCLUDED.size), cosigned_at = now(),
			error = NULL, failing_since = NULL`, origin, witness, size)
		return err
	})
	if err != nil {
		return fmt.Errorf("store cosignature: %w", err)
	}
	return nil
}

// LogWitnessSize is the size the witness last cosigned for origin (0:
// never).
func (s *Store) LogWitnessSize(ctx context.Context, origin, witness string) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var size int64
	err := s.pool.QueryRow(ctx, `SELECT size FROM log_witnesses WHERE origin = $1 AND witness = $2`, origin, witness).Scan(&size)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read witness size: %w", err)
	}
	return size, nil
}

// LogWitnessFailed records a witness's failure (kept until it cosigns).
func (s *Store) LogWitnessFailed(ctx context.Context, origin, witness, reason string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if len(reason) > 500 {
		reason = reason[:500]
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO log_witnesses (origin, witness, error, failing_since) VALUES ($1, $2, $3, now())
		ON CONFLICT (origin, witness) DO UPDATE SET error = EXCLUDED.error,
		failing_since = coalesce(log_witnesses.failing_since, now())`, origin, witness, strings.ToValidUTF8(reason, "?"))
	if err != nil {
		return fmt.Errorf("record witness failure: %w", err)
	}
	return nil
}

// LogWitness is where one witness stands.
type LogWitness struct {
	Witness      string // its verifier key
	Size         int64
	CosignedAt   *time.Time
	Error        string
	FailingSince *time.Time
}

// LogWitnesses reads where every witness of origin stands.
func (s *Store) LogWitnesses(ctx context.Context, origin string) ([]LogWitness, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT witness, size, cosigned_at, coalesce(error, ''), failing_since FROM log_witnesses WHERE origin = $1`, origin)
	if err != nil {
		return nil, fmt.Errorf("read witnesses: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LogWitness, error) {
		var w LogWitness
		err := r.Scan(&w.Witness, &w.Size, &w.CosignedAt, &w.Error, &w.FailingSince)
		return w, err
	})
}

// LatestWitnessedCheckpoint reads the newest checkpoint of origin that at
// least quorum witnesses cosigned, with the cosignature lines of the
// witnesses named (in that order; others are left out). quorum 0: the
// newest checkpoint. Newest is the newest checkpoint signed, witnessed or
// not (its size; 0 when none).
func (s *Store) LatestWitnessedCheckpoint(ctx context.Context, origin string, quorum int, witnesses []string) (c LogCheckpoint, lines []string, newest int64, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(size), -1) FROM log_checkpoints WHERE origin = $1`, origin).Scan(&newest); err != nil {
		return LogCheckpoint{}, nil, 0, false, fmt.Errorf("read newest checkpoint: %w", err)
	}
	if newest < 0 {
		return LogCheckpoint{}, nil, 0, false, nil
	}
	if quorum <= 0 {
		c, ok, err = latestCheckpoint(ctx, s.pool, origin)
		return c, nil, newest, ok, err
	}
	c = LogCheckpoint{Origin: origin}
	var root []byte
	err = s.pool.QueryRow(ctx, `SELECT size, root, note, signed_at FROM log_checkpoints
		WHERE origin = $1 AND cosignatures > 0 AND cosignatures >= $2 ORDER BY size DESC LIMIT 1`, origin, quorum).
		Scan(&c.Size, &root, &c.Note, &c.SignedAt)
	if err == pgx.ErrNoRows {
		return LogCheckpoint{}, nil, newest, false, nil
	}
	if err != nil || len(root) != tlog.HashSize {
		return LogCheckpoint{}, nil, 0, false, fmt.Errorf("read witnessed checkpoint: %v (root of %d bytes)", err, len(root))
	}
	c.Root = tlog.Hash(root)
	rows, err := s.pool.Query(ctx, `SELECT witness, line FROM log_cosignatures WHERE origin = $1 AND size = $2 AND witness = ANY($3)`,
		origin, c.Size, witnesses)
	if err != nil {
		return LogCheckpoint{}, nil, 0, false, fmt.Errorf("read cosignatures: %w", err)
	}
	by := map[string]string{}
	for rows.Next() {
		var w, l string
		if err := rows.Scan(&w, &l); err != nil {
			rows.Close()
			return LogCheckpoint{}, nil, 0, false, fmt.Errorf("read cosignatures: %w", err)
		}
		by[w] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return LogCheckpoint{}, nil, 0, false, fmt.Errorf("read cosignatures: %w", err)
	}
	for _, w := range witnesses {
		if l, ok := by[w]; ok {
			lines = append(lines, l)
		}
	}
	return c, lines, newest, true, nil
}

// LogFrontier is the newest slot whose attestations the log may take
// (see LogAppend), and the log's size when that rule began (leaves below
// it keep the order an older release appended them in).
func (s *Store) LogFrontier(ctx context.Context) (frontier uint64, orderFrom int64, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var f int64
	if err := s.pool.QueryRow(ctx, `SELECT frontier, order_from_size FROM log_order`).Scan(&f, &orderFrom); err != nil {
		return 0, 0, fmt.Errorf("read log frontier: %w", err)
	}
	return uint64(f), orderFrom, nil
}

// AdvanceLogFrontier declares that every attestation of every slot up to
// slot is stored and final: the log may take them. The frontier never
// moves back.
func (s *Store) AdvanceLogFrontier(ctx context.Context, slot uint64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE log_order SET frontier = GREATEST(frontier, $1)`, int64(slot)); err != nil {
		return fmt.Errorf("advance log frontier: %w", err)
	}
	return nil
}

// LowestUnfinalizedSlot is the lowest slot of an attestation not final
// yet; ok is false when there is none.
func (s *Store) LowestUnfinalizedSlot(ctx context.Context) (slot uint64, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var v *int64
	if err := s.pool.QueryRow(ctx, `SELECT min(slot) FROM attestations WHERE NOT finalized`).Scan(&v); err != nil {
		return 0, false, fmt.Errorf("lowest unfinalized slot: %w", err)
	}
	if v == nil {
		return 0, false, nil
	}
	return uint64(*v), true, nil
}

// TransactionAfter is a stored attestation's transaction in the lowest
// slot above slot (ok false: none): listing the chain's signatures before
// it starts just above slot.
func (s *Store) TransactionAfter(ctx context.Context, slot uint64) (sig string, ok bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err = s.pool.QueryRow(ctx, `SELECT tx_signature FROM attestations WHERE slot > $1 ORDER BY slot LIMIT 1`, int64(slot)).Scan(&sig)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("transaction after slot %d: %w", slot, err)
	}
	return sig, true, nil
}

// SettleLogFrontier moves the frontier as far as the stored data alone
// allows: to the newest slot stored, short of the lowest one not final
// yet. Only for a writer whose writes are the whole chain (seed, tests,
// benchmarks); the indexer checks the chain instead (AdvanceLogFrontier).
func (s *Store) SettleLogFrontier(ctx context.Context) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE log_order SET frontier = GREATEST(frontier, LEAST(
			(SELECT COALESCE(max(slot), 0) FROM attestations),
			(SELECT COALESCE(min(slot) - 1, 9223372036854775807) FROM attestations WHERE NOT finalized)))`); err != nil {
		return fmt.Errorf("settle log frontier: %w", err)
	}
	return nil
}

// OldestUnwitnessed is how long the oldest checkpoint of origin signed
// after the newest one with quorum cosignatures has waited for them (0:
// none waits, or quorum is 0).
func (s *Store) OldestUnwitnessed(ctx context.Context, origin string, quorum int) (time.Duration, error) {
	if quorum <= 0 {
		return 0, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var secs float64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(signed_at)), 0)::float8 FROM log_checkpoints
		WHERE origin = $1 AND size > (SELECT COALESCE(max(size), -1) FROM log_checkpoints WHERE origin = $1 AND cosignatures >= $2)`,
		origin, quorum).Scan(&secs); err != nil {
		return 0, fmt.Errorf("oldest unwitnessed checkpoint: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
