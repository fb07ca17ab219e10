package benchkit

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/store"
)

// Stores is a bench's own PostgreSQL database (migrated; dropped by Close)
// and its Redis.
type Stores struct {
	Store *store.Store
	// AdminURL is the PostgreSQL server's admin URL, DatabaseURL the
	// bench's database on it, RedisURL the Redis server.
	AdminURL, DatabaseURL, RedisURL string
	// Dir is a temporary directory, removed by Close: the throwaway
	// servers' and the bench's own files.
	Dir     string
	closers []func()
}

// OpenStores creates the database name (dropped by Close) on the servers
// named by DATABASE_URL (an admin URL) and REDIS_URL, or by what
// `attestd stores` exports (ATTESTD_TEST_POSTGRES_URL and
// ATTESTD_TEST_REDIS_URL), and starts a throwaway server under a temporary
// directory for each one that none names. The store is opened with opt
// and migrated.
func OpenStores(ctx context.Context, name string, opt store.Options) (*Stores, error) {
	s := &Stores{}
	tmp, err := os.MkdirTemp("", "attestd-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("bench stores: %w", err)
	}
	s.Dir = tmp
	s.closers = append(s.closers, func() { os.RemoveAll(tmp) })
	// Readable by the PostgreSQL server's account when it is not ours.
	_ = os.Chmod(tmp, 0o755)
	scratch, err := devstack.StartScratch(ctx, tmp, cmp.Or(os.Getenv("DATABASE_URL"), os.Getenv(devstack.EnvTestPostgres)),
		cmp.Or(os.Getenv("REDIS_URL"), os.Getenv(devstack.EnvTestRedis)))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, scratch.Stop)
	s.AdminURL, s.RedisURL = scratch.PostgresURL, scratch.RedisURL
	dbURL, drop, err := devstack.CreateDatabase(ctx, s.AdminURL, name)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, drop)
	s.DatabaseURL = dbURL
	if s.Store, err = store.Open(ctx, dbURL, opt); err != nil {
		s.Close()
		return nil, err
	}
	s.closers = append(s.closers, s.Store.Close)
	if _, err := s.Store.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("bench stores: migrate: %w", err)
	}
	return s, nil
}

// Close closes the store, drops the database and stops what OpenStores
// started, in reverse order.
func (s *Stores) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
