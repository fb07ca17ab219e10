package benchkit

import (
	"context"
	"os"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/store"
	"github.com/jackc/pgx/v5"
)

// OpenStores makes a migrated database on the suite's servers and Close
// drops it and removes its directory.
func TestOpenStores(t *testing.T) {
	if os.Getenv(devstack.EnvTestPostgres) == "" {
		t.Skip("needs the suite's PostgreSQL (attestd stores)")
	}
	ctx := context.Background()
	s, err := OpenStores(ctx, "benchkit_open_stores", store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Store.Pool().QueryRow(ctx, "SELECT count(*) FROM attestations").Scan(&n); err != nil || n != 0 {
		t.Fatalf("migrated store: %d %v", n, err)
	}
	if s.RedisURL == "" || s.Dir == "" {
		t.Fatalf("stores %+v", s)
	}
	cfg, err := pgx.ParseConfig(s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exists := func() bool {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.Database).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		t.Fatalf("database %s not found while open", cfg.Database)
	}
	s.Close()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("dir %s left behind: %v", s.Dir, err)
	}
	if exists() {
		t.Fatalf("database %s left behind", cfg.Database)
	}
}
