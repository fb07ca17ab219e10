package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/jackc/pgx/v5"
	"github.com/mr-tron/base58"
	"golang.org/x/mod/sumdb/tlog"
)

// segment is one UTC day of a bench log and how many attestations it holds.
type segment struct {
	day  dataset.Day
	rows int64
}

// loadedLog is a log loaded into its own database.
type loadedLog struct {
	st       *store.Store
	url      string
	drop     func()
	segs     []segment
	ends     []int64 // ends[i]: the first leaf after segment i
	total    int64
	hashes   []tlog.Hash // every stored hash (tlog.StoredHashes layout)
	took     time.Duration
	dbBytes  int64 // pg_database_size after the load
	maxSlot  int64
	dropped  []string // the attestations indexes dropped for the load
	checkpts []int64  // the sizes of the checkpoints signed so far
}

func (l *loadedLog) close() {
	if l.st != nil {
		l.st.Close()
	}
	if l.drop != nil {
		l.drop()
	}
}

// genRow is one generated attestation and its leaf.
type genRow struct {
	pda, agentPDA, tx string
	agentID           []byte
	typ               int16
	hash              [32]byte
	sig               [64]byte
	privacy           bool
	ts                time.Time
	slot              int64
	leaf              []byte
}

// genBatch is a run of consecutive leaves, with the stored hashes they
// added (ids [hashFirst, hashFirst+len(hashes))).
type genBatch struct {
	first     int64
	rows      []genRow
	hashFirst int64
	hashes    []tlog.Hash
}

const loadBatch = 10_000

// chanSource feeds one COPY from the generator's batches.
type chanSource struct {
	in   <-chan *genBatch
	cur  *genBatch
	i    int
	vals func(b *genBatch, i int) []any
	size func(b *genBatch) int
}

func (s *chanSource) Next() bool {
	s.i++
	for s.cur == nil || s.i >= s.size(s.cur) {
		b, ok := <-s.in
		if !ok {
			return false
		}
		s.cur, s.i = b, 0
	}
	return true
}

func (s *chanSource) Values() ([]any, error) { return s.vals(s.cur, s.i), nil }
func (s *chanSource) Err() error             { return nil }

// loadLog makes a migrated database holding a log of the segments'
// attestations: agents seeded, then attestations, leaves (the exact bytes
// attestation.LogLeaf gives for each row) and stored hashes (computed
// here with tlog.StoredHashes, one leaf after the other) written with
// three concurrent COPYs, the log's size and order frontier set. No
// checkpoint: signCheckpoint signs them.
func (b *bench) loadLog(ctx context.Context, name string, segs []segment) (*loadedLog, error) {
	l := &loadedLog{segs: segs}
	for _, s := range segs {
		l.total += s.rows
		l.ends = append(l.ends, l.total)
	}
	url, drop, err := devstack.CreateDatabase(ctx, b.stores.PostgresURL, name)
	if err != nil {
		return nil, err
	}
	l.url, l.drop = url, drop
	if l.st, err = store.Open(ctx, url, store.Options{MaxConns: 8, QueryTimeout: 30 * time.Minute}); err != nil {
		l.close()
		return nil, err
	}
	if _, err := l.st.Migrate(ctx); err != nil {
		l.close()
		return nil, err
	}
	res, err := seed.Run(ctx, l.st, seed.Options{Agents: 50, Attestations: 0, Seed: 1, Logger: b.quiet})
	if err != nil {
		l.close()
		return nil, err
	}
	start := time.Now()
	if l.dropped, err = prepareLoad(ctx, l.st); err != nil {
		l.close()
		return nil, err
	}
	if err := l.copyAll(ctx, res.Agents); err != nil {
		l.close()
		return nil, err
	}
	logf("%s: log size, order frontier, VACUUM ANALYZE...", name)
	for _, q := range []string{
		`ALTER TABLE attestations ENABLE TRIGGER USER`,
		fmt.Sprintf(`UPDATE log_size SET size = %d`, l.total),
		fmt.Sprintf(`UPDATE log_order SET frontier = %d`, l.maxSlot),
		`VACUUM ANALYZE attestations, log_leaves, log_hashes`,
	} {
		if _, err := l.st.Pool().Exec(ctx, q); err != nil {
			l.close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	l.took = time.Since(start)
	if err := l.st.Pool().QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&l.dbBytes); err != nil {
		l.close()
		return nil, err
	}
	logf("%s: %d leaves loaded in %s (database %.0f MB)", name, l.total, l.took.Round(time.Second), float64(l.dbBytes)/1e6)
	return l, nil
}

// prepareLoad drops the attestations indexes that neither the producer
// (which joins leaves to attestations by pda) nor a list by time (the
// size part's pages: attestations_order) reads, and turns off the
// table's triggers for the load (the log's queue and the agents' last
// activity: the load writes the log itself). It returns what it dropped.
func prepareLoad(ctx context.Context, st *store.Store) ([]string, error) {
	var dropped []string
	rows, err := st.Pool().Query(ctx, `SELECT conname FROM pg_constraint WHERE conrelid = 'attestations'::regclass AND contype = 'u'`)
	if err != nil {
		return nil, err
	}
	cons, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, c := range cons {
		if _, err := st.Pool().Exec(ctx, `ALTER TABLE attestations DROP CONSTRAINT `+pgx.Identifier{c}.Sanitize()); err != nil {
			return nil, err
		}
		dropped = append(dropped, c)
	}
	rows, err = st.Pool().Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'attestations'
		AND indexname NOT IN ('attestations_pkey', 'attestations_order') ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, i := range idx {
		if _, err := st.Pool().Exec(ctx, `DROP INDEX `+pgx.Identifier{i}.Sanitize()); err != nil {
			return nil, err
		}
		dropped = append(dropped, i)
	}
	_, err = st.Pool().Exec(ctx, `ALTER TABLE attestations DISABLE TRIGGER USER`)
	return dropped, err
}

// copyAll generates the rows and writes them with three COPYs.
func (l *loadedLog) copyAll(ctx context.Context, agents []seed.Agent) error {
	ids := make([][]byte, len(agents))
	pdas := make([]string, len(agents))
	for k, a := range agents {
		ids[k] = a.Key.Public().(ed25519.PublicKey)
		pdas[k] = a.PDA.String()
	}
	chans := [3]chan *genBatch{make(chan *genBatch, 2), make(chan *genBatch, 2), make(chan *genBatch, 2)}
	type target struct {
		table string
		cols  []string
		src   *chanSource
	}
	targets := []target{
		{"attestations", []string{"pda", "agent_pda", "agent_id", "action_type", "action_hash", "privacy_mode", "ts", "agent_signature",
			"signature_valid", "tx_signature", "event_index", "slot", "finalized"}, &chanSource{in: chans[0],
			size: func(b *genBatch) int { return len(b.rows) },
			vals: func(b *genBatch, i int) []any {
				r := &b.rows[i]
				return []any{r.pda, r.agentPDA, r.agentID, r.typ, r.hash[:], r.privacy, r.ts, r.sig[:], true, r.tx, int32(0), r.slot, true}
			}}},
		{"log_leaves", []string{"idx", "pda", "leaf"}, &chanSource{in: chans[1],
			size: func(b *genBatch) int { return len(b.rows) },
			vals: func(b *genBatch, i int) []any { return []any{b.first + int64(i), b.rows[i].pda, b.rows[i].leaf} }}},
		{"log_hashes", []string{"id", "hash"}, &chanSource{in: chans[2],
			size: func(b *genBatch) int { return len(b.hashes) },
			vals: func(b *genBatch, i int) []any { return []any{b.hashFirst + int64(i), b.hashes[i][:]} }}},
	}
	errs := make(chan error, len(targets))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, t := range targets {
		go func() {
			conn, err := l.st.Pool().Acquire(cctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			if _, err := conn.Exec(cctx, `SET synchronous_commit = off`); err != nil {
				errs <- err
				return
			}
			_, err = conn.CopyFrom(cctx, pgx.Identifier{t.table}, t.cols, t.src)
			if err != nil {
				err = fmt.Errorf("copy %s: %w", t.table, err)
				cancel()
				for range t.src.in { // let the generator finish
				}
			}
			errs <- err
		}()
	}
	genErr := l.generate(cctx, ids, pdas, chans)
	for _, c := range chans {
		close(c)
	}
	var first error
	for range targets {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if genErr != nil && first == nil {
		first = genErr
	}
	return first
}

// generate makes the log's rows in batches: random addresses, hashes and
// signatures (which is what they look like), 50 agents, slots increasing
// with time, timestamps spread evenly over each segment's day.
func (l *loadedLog) generate(ctx context.Context, ids [][]byte, pdas []string, out [3]chan *genBatch) error {
	rng := mrand.New(mrand.NewChaCha8([32]byte{1, 2, 3}))
	l.hashes = make([]tlog.Hash, 0, tlog.StoredHashCount(l.total))
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		hs := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			hs[i] = l.hashes[id]
		}
		return hs, nil
	})
	t0 := l.segs[0].day.Unix()
	var slot int64 = 300_000_000
	var idx int64
	report, start := time.Now(), time.Now()
	var b *genBatch
	flush := func() error {
		if b == nil || len(b.rows) == 0 {
			return nil
		}
		b.hashes = l.hashes[b.hashFirst:len(l.hashes):len(l.hashes)]
		for _, c := range out {
			select {
			case c <- b:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		b = nil
		return nil
	}
	for _, s := range l.segs {
		for j := range s.rows {
			if b == nil {
				b = &genBatch{first: idx, rows: make([]genRow, 0, loadBatch), hashFirst: int64(len(l.hashes))}
			}
			ts := s.day.Add(time.Duration(j*86400/s.rows) * time.Second)
			slot = max(slot+1, 300_000_000+(ts.Unix()-t0)*5/2)
			k := rng.IntN(len(pdas))
			b.rows = append(b.rows, genRow{agentPDA: pdas[k], agentID: ids[k], typ: int16(rng.IntN(int(attestation.NumActionTypes))),
				privacy: rng.IntN(10) == 0, ts: ts, slot: slot})
			r := &b.rows[len(b.rows)-1]
			var pda [32]byte
			var tx [64]byte
			fill(rng, pda[:])
			fill(rng, tx[:])
			fill(rng, r.hash[:])
			fill(rng, r.sig[:])
			r.pda, r.tx = base58.Encode(pda[:]), base58.Encode(tx[:])
			leaf, err := attestation.LogLeaf(attestation.Attestation{PDA: r.pda, AgentPDA: r.agentPDA, ActionType: attestation.ActionType(r.typ),
				ActionHash: hex.EncodeToString(r.hash[:]), TxSignature: r.tx, Slot: uint64(r.slot), Timestamp: attestation.At(ts)})
			if err != nil {
				return err
			}
			r.leaf = leaf
			hs, err := tlog.StoredHashes(idx, leaf, reader)
			if err != nil {
				return err
			}
			l.hashes = append(l.hashes, hs...)
			idx++
			if len(b.rows) == loadBatch {
				if err := flush(); err != nil {
					return err
				}
			}
			if time.Since(report) > 10*time.Second {
				report = time.Now()
				logf("  load: %d of %d leaves (%.0f/s)", idx, l.total, float64(idx)/time.Since(start).Seconds())
			}
		}
	}
	l.maxSlot = slot
	return flush()
}

func fill(rng *mrand.Rand, p []byte) {
	for i := 0; i < len(p); i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, len(p)); j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
}

// signCheckpoint signs the checkpoint of the log's first size leaves with
// the bench's key and stores it (a log without witnesses: quorum 0, the
// newest checkpoint is the one the producer cuts against).
func (b *bench) signCheckpoint(ctx context.Context, l *loadedLog, size int64) error {
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		hs := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			hs[i] = l.hashes[id]
		}
		return hs, nil
	})
	root, err := tlog.TreeHash(size, reader)
	if err != nil {
		return err
	}
	text, err := logformat.Checkpoint{Origin: b.key.Name, Size: size, Root: root}.Sign(b.key.Signer)
	if err != nil {
		return err
	}
	if _, err := l.st.Pool().Exec(ctx, `INSERT INTO log_checkpoints (origin, size, root, note) VALUES ($1, $2, $3, $4)`,
		b.key.Name, size, root[:], text); err != nil {
		return fmt.Errorf("store the checkpoint of %d: %w", size, err)
	}
	l.checkpts = append(l.checkpts, size)
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}
