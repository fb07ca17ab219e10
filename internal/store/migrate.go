package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises concurrent migrations.
const migrationLock = 0x61747374_6d696772 // "atst" "migr"

// Migration is one embedded schema change.
type Migration struct {
	Version string // file name without .sql, e.g. 0001_init
	SQL     string
}

// Migrations lists the embedded migrations in order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: strings.TrimSuffix(e.Name(), ".sql"), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate applies every embedded migration not applied yet, each in its own
// transaction, under an advisory lock so concurrent callers are safe. It
// returns the versions it applied (none when the schema is current).
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var applied []string
	for _, m := range ms {
		var done bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)", m.Version).Scan(&done); err != nil {
			return applied, fmt.Errorf("migrate: check %s: %w", m.Version, err)
		}
		if done {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.Version)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: apply %s: %w", m.Version, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// Schema is how the database's schema compares with the migrations this
// binary embeds.
type Schema struct {
	Have    int      // number of the newest applied migration (0: none)
	Need    int      // number of the newest embedded migration
	Missing []string // embedded migrations not applied, in order
	Unknown []string // applied migrations this binary does not know (a newer binary ran)
}

// Current reports whether the schema is exactly the one this binary needs.
func (s Schema) Current() bool { return len(s.Missing) == 0 && len(s.Unknown) == 0 }

// Err explains a schema that is not current, naming the versions and what
// to do; nil when it is current.
func (s Schema) Err() error {
	switch {
	case len(s.Unknown) > 0:
		return fmt.Errorf("%w: the database is ahead of this binary (have version %d, this binary knows up to %d; unknown migrations %s): run a newer attestd",
			ErrSchemaAhead, s.Have, s.Need, strings.Join(s.Unknown, ", "))
	case len(s.Missing) > 0:
		return fmt.Errorf("%w: have version %d, need %d (missing %s): run `attestd migrate`",
			ErrSchemaBehind, s.Have, s.Need, strings.Join(s.Missing, ", "))
	}
	return nil
}

var (
	// ErrSchemaBehind: migrations this binary embeds are not applied.
	ErrSchemaBehind = errors.New("database schema is not migrated")
	// ErrSchemaAhead: the database has migrations this binary does not know.
	ErrSchemaAhead = errors.New("database schema is newer than this binary")
)

// CheckSchema compares the applied migrations (schema_migrations) with the
// embedded ones. It changes nothing.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) (Schema, error) {
	ms, err := Migrations()
	if err != nil {
		return Schema{}, err
	}
	var s Schema
	known := map[string]bool{}
	for _, m := range ms {
		known[m.Version] = true
		s.Need = max(s.Need, versionNumber(m.Version))
	}
	var applied []string
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return s, fmt.Errorf("check schema: %w", err)
	}
	if exists {
		rows, err := pool.Query(ctx, "SELECT version FROM schema_migrations ORDER BY version")
		if err != nil {
			return s, fmt.Errorf("check schema: %w", err)
		}
		if applied, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return s, fmt.Errorf("check schema: %w", err)
		}
	}
	done := map[string]bool{}
	for _, v := range applied {
		done[v] = true
		s.Have = max(s.Have, versionNumber(v))
		if !known[v] {
			s.Unknown = append(s.Unknown, v)
		}
	}
	for _, m := range ms {
		if !done[m.Version] {
			s.Missing = append(s.Missing, m.Version)
		}
	}
	return s, nil
}

// versionNumber is the leading number of a migration version ("0011_x": 11).
func versionNumber(v string) int {
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}
