package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/attestd/attestd/internal/backup"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog"
	"github.com/jackc/pgx/v5"
)

// restorePart: from `attestd restore` to serving the witnessed size, for
// a database of n attestations. A log of n leaves (attestations and
// leaves loaded with COPY; the leaves' bytes are not the attestations',
// which no step here reads), its checkpoint cosigned by a litewitness;
// a backup (pg_dump); gap attestations stored after it, appended and
// cosigned (the witnessed size is n+gap); then the backup restored into
// an empty database, the appender started on it (it asks the witness),
// the gap's attestations stored again (what the indexer's refill writes;
// its chain fetches are bench/indexer's), and the time until the
// witness has cosigned the regrown log at its witnessed size, which is
// when API nodes serve it again.
func (b *bench) restorePart(ctx context.Context, n int64, gap int) error {
	src, srcURL, agents, done, err := b.database(ctx, "log_restore_src", 50)
	if err != nil {
		return err
	}
	defer done()
	lstart := time.Now()
	if err := copyAttestations(ctx, src, agents, n); err != nil {
		return err
	}
	if err := bulkLoad(ctx, src, n); err != nil {
		return err
	}
	if _, err := src.Pool().Exec(ctx, `UPDATE log_order SET frontier = $1`, n); err != nil {
		return err
	}
	if _, err := src.Pool().Exec(ctx, `VACUUM ANALYZE attestations`); err != nil {
		return err
	}
	load := time.Since(lstart)
	cfg, err := b.oneWitness(ctx)
	if err != nil {
		return err
	}
	stop, err := b.startAppender(ctx, src, cfg)
	if err != nil {
		return err
	}
	if err := cosignedAt(ctx, src, cfg, n); err != nil {
		stop()
		return err
	}
	file := filepath.Join(b.tmp, "restore.dump")
	fmt.Fprintf(os.Stderr, "restore: pg_dump of %d attestations...\n", n)
	bk, err := backup.Take(ctx, src, srcURL, file)
	if err != nil {
		stop()
		return err
	}
	rng := mrand.New(mrand.NewPCG(5, 6))
	slot := uint64(n)
	recs := records(rng, agents, gap, &slot)
	if err := storeAll(ctx, src, recs); err != nil {
		stop()
		return err
	}
	witnessed := n + int64(gap)
	err = cosignedAt(ctx, src, cfg, witnessed)
	stop()
	if err != nil {
		return err
	}

	dstURL, drop, err := devstack.CreateDatabase(ctx, b.stores.PostgresURL, "log_restore_dst")
	if err != nil {
		return err
	}
	defer drop()
	dst, err := store.Open(ctx, dstURL, store.Options{MaxConns: 8, QueryTimeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	defer dst.Close()
	fmt.Fprintf(os.Stderr, "restore: pg_restore, then regrow %d leaves to the witnessed size %d...\n", gap, witnessed)
	t0 := time.Now()
	if _, err := backup.Restore(ctx, dst, dstURL, file); err != nil {
		return err
	}
	restored := time.Since(t0)
	stop, err = b.startAppender(ctx, dst, cfg)
	if err != nil {
		return err
	}
	defer stop()
	if err := storeAll(ctx, dst, recs); err != nil {
		return err
	}
	if err := cosignedAt(ctx, dst, cfg, witnessed); err != nil {
		return err
	}
	total := time.Since(t0)
	fmt.Printf("### Restore to the witnessed size\n\n")
	fmt.Printf("A database of %d attestations and a log of %d leaves (loaded with COPY in %s), its checkpoint cosigned by one litewitness; `attestd backup` (pg_dump, custom format) took %s for %.0f MB; %d attestations stored after it, appended and cosigned (witnessed size %d). Then, timed: `attestd restore` into an empty database, the appender started on it (it asks the witness, holds the log at the witnessed size), the %d attestations stored again as the indexer's refill writes them (its chain fetches are [bench/indexer](../indexer/RESULTS.md)'s), until the witness cosigned the regrown checkpoint of size %d.\n\n",
		n, n, load.Round(time.Second), bk.FinishedAt.Sub(bk.StartedAt).Round(100*time.Millisecond), float64(bk.Bytes)/1e6, gap, witnessed, gap, witnessed)
	fmt.Printf("| step | time |\n|---|---:|\n| pg_restore, migrations, hold (`attestd restore`) | %s |\n| regrow %d leaves and the witness's cosignature | %s |\n| **restore to serving the witnessed size** | **%s** |\n\n",
		restored.Round(100*time.Millisecond), gap, (total - restored).Round(100*time.Millisecond), total.Round(100*time.Millisecond))
	return nil
}

// oneWitness starts a litewitness for the bench's log and returns the
// appender's configuration with it (quorum 1).
func (b *bench) oneWitness(ctx context.Context) (translog.Config, error) {
	bin, err := litewitness.Binary(ctx, ".")
	if err != nil {
		return translog.Config{}, err
	}
	started, items, err := litewitness.ForLog(ctx, b.key.Name, b.vkey,
		litewitness.Options{Binary: bin, Dir: filepath.Join(b.tmp, "restore-witness"), Name: "witness.restore.bench.test/w"})
	if err != nil {
		return translog.Config{}, err
	}
	for _, w := range started {
		b.cleanups = append(b.cleanups, w.Stop)
	}
	ws, err := translog.ParseWitnesses(items)
	if err != nil {
		return translog.Config{}, err
	}
	return translog.Config{Key: b.key, CheckpointInterval: 200 * time.Millisecond, Batch: 5000, Poll: 50 * time.Millisecond,
		Witnesses: ws, Quorum: 1}, nil
}

// cosignedAt waits (10 minutes at most) until the checkpoint of size is
// cosigned by the quorum in st.
func cosignedAt(ctx context.Context, st *store.Store, cfg translog.Config, size int64) error {
	keys := []string{cfg.Witnesses[0].VerifierKey}
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, _, _, ok, err := st.LatestWitnessedCheckpoint(ctx, cfg.Origin(), cfg.Quorum, keys)
		if err != nil {
			return err
		}
		if ok && c.Size >= size {
			return nil
		}
	}
	return fmt.Errorf("no cosigned checkpoint of size %d within 10 minutes", size)
}

// storeAll stores recs as the indexer does (finalized), in batches, and
// settles the log's frontier.
func storeAll(ctx context.Context, st *store.Store, recs []store.AttestationRecord) error {
	for i := 0; i < len(recs); i += 1000 {
		if _, err := st.Apply(ctx, &store.Batch{Attestations: recs[i:min(i+1000, len(recs))]}); err != nil {
			return err
		}
	}
	return st.SettleLogFrontier(ctx)
}

// copyAttestations loads n finalized attestations of agents with COPY, at
// slots 1..n (no counters, no queue: only the rows and their indexes,
// which are what a restore spends its time on).
func copyAttestations(ctx context.Context, st *store.Store, agents []seed.Agent, n int64) error {
	fmt.Fprintf(os.Stderr, "restore: COPY %d attestations...\n", n)
	rng := mrand.New(mrand.NewPCG(7, 8))
	var i int64
	ids := make([][]byte, len(agents))
	for k, a := range agents {
		ids[k] = a.Key.Public().(ed25519.PublicKey)
	}
	_, err := st.Pool().CopyFrom(ctx, pgx.Identifier{"attestations"},
		[]string{"pda", "agent_pda", "agent_id", "action_type", "action_hash", "privacy_mode", "ts", "agent_signature",
			"signature_valid", "tx_signature", "event_index", "slot", "finalized"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			var h [32]byte
			var sig [64]byte
			for j := range h {
				h[j] = byte(rng.Uint32())
			}
			copy(sig[:], h[:])
			k := int(i) % len(agents)
			return []any{pdaOf(i - 1), agents[k].PDA.String(), ids[k], int16(i % 7), h[:], false,
				time.Unix(1_790_000_000+i/3, 0), sig[:], true, fmt.Sprintf("benchtx%040d", i), int32(0), i, true}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy attestations: %w", err)
	}
	_, err = st.Pool().Exec(ctx, `TRUNCATE log_queue`)
	return err
}
