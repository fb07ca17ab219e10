package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of the key statements.
var (
	// ErrPrefixTaken: another key already has this prefix (generate anew).
	ErrPrefixTaken = errors.New("key prefix already taken")
	// ErrKeyLimit: the account already holds the most active keys allowed.
	ErrKeyLimit = errors.New("account has the maximum number of active keys")
)

// accountName is the rule of migrations/0002_keys.sql, checked before a
// statement so a bad name is a clear error rather than a constraint name.
var accountName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// ValidAccountName reports whether name can name an account: 1 to 64
// characters, letters, digits and . _ @ -, starting with a letter or digit.
func ValidAccountName(name string) bool { return accountName.MatchString(name) }

// Account owns API keys.
type Account struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// APIKey is a stored key: never the key itself, only its SHA-256 and prefix.
type APIKey struct {
	ID          int64
	AccountID   int64
	AccountName string
	Prefix      string
	Hash        [32]byte
	Label       string
	Role        string // "admin" or "read" (package apikey names them)
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

// Revoked reports whether the key was revoked.
func (k *APIKey) Revoked() bool { return k.RevokedAt != nil }

// EnsureAccount returns the account named name, creating it when missing;
// created says whether it was made now.
func (s *Store) EnsureAccount(ctx context.Context, name string) (a Account, created bool, err error) {
	if !ValidAccountName(name) {
		return a, false, fmt.Errorf("account name %q: want 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", name)
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err = s.pool.QueryRow(ctx, `INSERT INTO accounts (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
		RETURNING id, name, created_at, (xmax = 0)`, name).Scan(&a.ID, &a.Name, &a.CreatedAt, &created)
	if err != nil {
		return a, false, fmt.Errorf("ensure account %s: %w", name, err)
	}
	return a, created, nil
}

// AccountByName reads an account; ErrNotFound when there is none.
func (s *Store) AccountByName(ctx context.Context, name string) (Account, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var a Account
	err := s.pool.QueryRow(ctx, `SELECT id, name, created_at FROM accounts WHERE name = $1`, name).Scan(&a.ID, &a.Name, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("read account %s: %w", name, err)
	}
	return a, nil
}

// InsertKey stores a new key of the account with the given role ("admin"
// or "read"; the schema refuses any other). It fails with ErrPrefixTaken
// when the prefix is in use, ErrKeyLimit when the account already has
// maxActive unrevoked keys (maxActive <= 0: no limit) and ErrNotFound when
// the account does not exist. The account row is locked for the check, so
// concurrent inserts cannot exceed the limit.
func (s *Store) InsertKey(ctx context.Context, accountID int64, prefix string, hash [32]byte, label, role string, maxActive int) (APIKey, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k := APIKey{AccountID: accountID, Prefix: prefix, Hash: hash, Label: label, Role: role}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT name FROM accounts WHERE id = $1 FOR UPDATE`, accountID).Scan(&k.AccountName)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("lock account: %w", err)
		}
		if maxActive > 0 {
			var active int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`,
				accountID).Scan(&active); err != nil {
				return fmt.Errorf("count active keys: %w", err)
			}
			if active >= maxActive {
				return ErrKeyLimit
			}
		}
		err = tx.QueryRow(ctx, `INSERT INTO api_keys (account_id, prefix, key_hash, label, role) VALUES ($1, $2, $3, $4, $5)
			RETURNING id, created_at`, accountID, prefix, hash[:], label, role).Scan(&k.ID, &k.CreatedAt)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return ErrPrefixTaken
		}
		if err != nil {
			return fmt.Errorf("insert key: %w", err)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrKeyLimit) || errors.Is(err, ErrPrefixTaken) {
			return APIKey{}, err
		}
		return APIKey{}, fmt.Errorf("create key for account %d: %w", accountID, err)
	}
	return k, nil
}

const keyColumns = `k.id, k.account_id, a.name, k.prefix, k.key_hash, k.label, k.role, k.created_at, k.last_used_at, k.revoked_at`

func scanKey(row pgx.Row) (APIKey, error) {
	var k APIKey
	var hash []byte
	if err := row.Scan(&k.ID, &k.AccountID, &k.AccountName, &k.Prefix, &hash, &k.Label, &k.Role, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt); err != nil {
		return k, err
	}
	if len(hash) != len(k.Hash) {
		return k, fmt.Errorf("key %s: stored hash has %d bytes", k.Prefix, len(hash))
	}
	copy(k.Hash[:], hash)
	return k, nil
}

// KeyByPrefix reads the key with this prefix (revoked or not); ErrNotFound
// when there is none.
func (s *Store) KeyByPrefix(ctx context.Context, prefix string) (APIKey, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id
		WHERE k.prefix = $1`, prefix))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("read key %s: %w", prefix, err)
	}
	return k, nil
}

// ListKeys returns one page of the account's keys, newest first, and how
// many keys the account has.
func (s *Store) ListKeys(ctx context.Context, accountID int64, limit, offset int) ([]APIKey, int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id
		WHERE k.account_id = $1 ORDER BY k.created_at DESC, k.id DESC LIMIT $2 OFFSET $3`, accountID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIKey, error) { return scanKey(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list keys: %w", err)
	}
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE account_id = $1`, accountID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count keys: %w", err)
	}
	return keys, total, nil
}

// RevokeKey revokes the key with this prefix. With accountID > 0 only a
// key of that account matches; another account's key is ErrNotFound, as is
// an unknown prefix. With roles set, only a key of one of those roles
// matches (others are ErrNotFound too); nil matches every role. Revoking a
// revoked key keeps its first revocation time.
func (s *Store) RevokeKey(ctx context.Context, prefix string, accountID int64, roles []string) (APIKey, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	k, err := scanKey(s.pool.QueryRow(ctx, `UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, now())
		FROM accounts a WHERE a.id = k.account_id AND k.prefix = $1 AND ($2 <= 0 OR k.account_id = $2)
			AND ($3::text[] IS NULL OR k.role = ANY($3::text[]))
		RETURNING `+keyColumns, prefix, accountID, roles))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("revoke key %s: %w", prefix, err)
	}
	return k, nil
}

// TouchKeys records when keys were last used, in one statement: ids[i] was
// used at at[i]. A recorded time never moves backwards.
func (s *Store) TouchKeys(ctx context.Context, ids []int64, at []time.Time) error {
	if len(ids) != len(at) {
		return fmt.Errorf("touch keys: %d ids but %d times", len(ids), len(at))
	}
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = v.at
		FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, at)
		WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.at)`, ids, at)
	if err != nil {
		return fmt.Errorf("touch %d keys: %w", len(ids), err)
	}
	return nil
}
