package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrWalletTaken: another account already has this wallet.
var ErrWalletTaken = errors.New("wallet already linked to another account")

// WalletAccountName is the name of the account made for a wallet that signs
// in for the first time.
func WalletAccountName(wallet string) string { return "wallet." + wallet }

// WalletAccount returns the account that has the wallet; ErrNotFound when
// none has.
func (s *Store) WalletAccount(ctx context.Context, wallet string) (Account, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var a Account
	err := s.pool.QueryRow(ctx, `SELECT id, name, created_at FROM accounts WHERE wallet = $1`, wallet).Scan(&a.ID, &a.Name, &a.CreatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return a, ErrNotFound
	case err != nil:
		return a, fmt.Errorf("account of wallet %s: %w", wallet, err)
	}
	return a, nil
}

// EnsureWalletAccount returns the account of the wallet (a base58 Solana
// address the caller has checked), making one named WalletAccountName when
// the wallet has none; created says whether it was made now.
func (s *Store) EnsureWalletAccount(ctx context.Context, wallet string) (a Account, created bool, err error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	err = s.pool.QueryRow(ctx, `INSERT INTO accounts (name, wallet) VALUES ($1, $2)
		ON CONFLICT (wallet) DO UPDATE SET wallet = EXCLUDED.wallet
		RETURNING id, name, created_at, (xmax = 0)`, WalletAccountName(wallet), wallet).Scan(&a.ID, &a.Name, &a.CreatedAt, &created)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		// The name is taken by an account without this wallet (made on the
		// CLI under that name): link it rather than fail.
		return a, false, fmt.Errorf("account %s exists without wallet %s; link it with attestd accounts link-wallet: %w",
			WalletAccountName(wallet), wallet, ErrWalletTaken)
	}
	if err != nil {
		return a, false, fmt.Errorf("ensure account of wallet %s: %w", wallet, err)
	}
	return a, created, nil
}

// LinkWallet makes wallet the wallet of the account named name (replacing
// any it had). ErrNotFound: no such account; ErrWalletTaken: another
// account has the wallet.
func (s *Store) LinkWallet(ctx context.Context, name, wallet string) (Account, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var a Account
	err := s.pool.QueryRow(ctx, `UPDATE accounts SET wallet = $2 WHERE name = $1 RETURNING id, name, created_at`,
		name, wallet).Scan(&a.ID, &a.Name, &a.CreatedAt)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return a, ErrNotFound
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return a, ErrWalletTaken
	case err != nil:
		return a, fmt.Errorf("link wallet %s to account %s: %w", wallet, name, err)
	}
	return a, nil
}
