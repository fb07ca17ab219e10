package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Scratch is a PostgreSQL and a Redis a benchmark works against: the
// servers it was given, or throwaway ones it started.
type Scratch struct {
	PostgresURL, RedisURL string
	stop                  []func()
}

// StartScratch uses the servers at postgresURL and redisURL, starting a
// throwaway server under dir for each one that is empty. Stop stops what
// it started.
func StartScratch(ctx context.Context, dir, postgresURL, redisURL string) (*Scratch, error) {
	s := &Scratch{PostgresURL: postgresURL, RedisURL: redisURL}
	if s.PostgresURL == "" {
		pg, err := StartPostgres(ctx, dir+"/pg")
		if err != nil {
			return nil, fmt.Errorf("start postgres: %w", err)
		}
		s.stop = append(s.stop, pg.Stop)
		s.PostgresURL = pg.URL
	}
	if s.RedisURL == "" {
		r, err := StartRedis(ctx, dir+"/redis", 0)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("start redis: %w", err)
		}
		s.stop = append(s.stop, r.Stop)
		s.RedisURL = r.URL
	}
	return s, nil
}

// Stop stops the servers StartScratch started.
func (s *Scratch) Stop() {
	for i := len(s.stop) - 1; i >= 0; i-- {
		s.stop[i]()
	}
	s.stop = nil
}

// CreateDatabase creates an empty database named prefix_<random hex> on
// the server of adminURL and returns its URL; drop removes it.
func CreateDatabase(ctx context.Context, adminURL, prefix string) (url string, drop func(), err error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("parse postgres url: %w", err)
	}
	url = fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	drop = func() {
		c, err := pgx.Connect(context.Background(), adminURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return url, drop, nil
}
