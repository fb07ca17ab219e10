package store

import (
	"github.com/attestd/attestd/internal/tracing"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned by reads of a single record that does not exist.
var ErrNotFound = errors.New("not found")

// IsUnavailable reports whether err means the database could not answer
// now (connection lost, timeout, shutdown, too many clients) rather than a
// statement being wrong: callers answer 503 for the first and 500 for the
// second, like the public reads do.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) < 2:
			return false
		case pgErr.Code[:2] == "08", pgErr.Code[:2] == "53", pgErr.Code[:2] == "57":
			return true
		}
		return false
	}
	return true
}

// Notifier learns that indexed data changed, after the change committed.
// The cache implements it by bumping the index epoch on every node, to at
// least floor: the WAL position after the commit, which only grows, so
// epochs keep growing even when Redis forgot them (0 when unknown).
type Notifier interface {
	BumpEpoch(ctx context.Context, floor uint64) error
}

// Options tune the connection pool.
type Options struct {
	MaxConns     int32         // default 16
	QueryTimeout time.Duration // default 5 s; applied to every statement
	// Lazy opens the pool even when the database does not answer yet, so
	// a serving node can start and answer cached reads while it is down.
	Lazy bool
	// Replicas are read replicas for reads that carry a position
	// (AtLeast); none by default.
	Replicas ReplicaOptions
}

// Store is the Postgres layer. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	replicas *replicaSet // nil without read replicas
	notifier Notifier
	timeout  time.Duration
}

// tune sets the session settings every connection of ours starts with:
//   - random_page_cost 1.1: index pages of this workload are hot and
//     storage is SSD, so random reads are cheap (the default 4 assumes
//     disks);
//   - plan_cache_mode force_generic_plan: every statement is prepared once
//     per connection (pgx caches them) and its plan is made once, not at
//     each execution. Our statements take values only as parameters, and
//     their plans are index scans whatever the values (a test holds every
//     read to that), while a custom plan at 10M rows cost more to make than
//     to run: 0.5 ms of planning for a 0.2 ms count.
//
// and application_name attestd. A URL parameter of the same name (pgx
// sends unknown URL parameters as session settings) keeps its own value
// (so processes can be told apart in pg_stat_activity).
func tune(cfg *pgx.ConnConfig) {
	tracing.InstrumentPostgres(cfg) // a span per query, when tracing is on
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range map[string]string{"application_name": "attestd", "random_page_cost": "1.1", "plan_cache_mode": "force_generic_plan"} {
		if _, set := cfg.RuntimeParams[k]; !set {
			cfg.RuntimeParams[k] = v
		}
	}
}

// Open connects a pool to databaseURL and checks it answers.
func Open(ctx context.Context, databaseURL string, opt Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	cfg.MaxConns = 16
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	tune(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	s := &Store{pool: pool, timeout: 5 * time.Second}
	if opt.QueryTimeout > 0 {
		s.timeout = opt.QueryTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil && !opt.Lazy {
		pool.Close()
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if len(opt.Replicas.URLs) > 0 {
		if s.replicas, err = openReplicas(ctx, pool, opt.Replicas, cfg.MaxConns); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return s, nil
}

// SetNotifier sets who hears about committed changes (nil: nobody).
func (s *Store) SetNotifier(n Notifier) { s.notifier = n }

// Pool is the underlying pgx pool, for callers that need a dedicated
// connection (the indexer's advisory lock) or raw queries in tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the replica tracking and closes the pools.
func (s *Store) Close() {
	if s.replicas != nil {
		s.replicas.close()
	}
	s.pool.Close()
}

// Migrate applies pending migrations.
func (s *Store) Migrate(ctx context.Context) ([]string, error) { return Migrate(ctx, s.pool) }

// CheckSchema compares the database's applied migrations with the ones
// this binary embeds (see the package function CheckSchema).
func (s *Store) CheckSchema(ctx context.Context) (Schema, error) { return CheckSchema(ctx, s.pool) }

// Ping checks the database answers within a short deadline.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return s.pool.Ping(ctx)
}

// ctx bounds one statement by the store's query timeout.
func (s *Store) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, s.timeout)
}

func (s *Store) notify(ctx context.Context) {
	if s.notifier == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	// The data is committed; a failed bump is retried by the notifier itself.
	_ = s.notifier.BumpEpoch(ctx, s.walPosition(ctx))
}

// walPosition is the current WAL insert position as a number (0 if it
// cannot be read): after a commit, at or past the end of that commit's
// record. (The write position is not: with asynchronous commit it can
// still be short of the commit, and a replica that replayed up to it
// would not have the commit.) Replicas reach it once the WAL is written
// and streamed; when the last record ended exactly on a page boundary it
// lies a page header past anything a replica replays, which is why reads
// wait for a replica only for a bounded time.
func (s *Store) walPosition(ctx context.Context) uint64 {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var lsn int64
	if err := s.pool.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn); err != nil || lsn < 0 {
		return 0
	}
	return uint64(lsn)
}
