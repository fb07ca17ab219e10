package store

import (
	"context"
	"errors"
	"testing"
)

// TestWalletAccount: a wallet without an account is ErrNotFound; after
// EnsureWalletAccount, WalletAccount finds the same account.
func TestWalletAccount(t *testing.T) {
	t.Parallel()
	st := open(t)
	ctx := context.Background()
	const wallet = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
	if _, err := st.WalletAccount(ctx, wallet); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown wallet: %v, want ErrNotFound", err)
	}
	made, created, err := st.EnsureWalletAccount(ctx, wallet)
	if err != nil || !created {
		t.Fatalf("ensure: %v %v", created, err)
	}
	got, err := st.WalletAccount(ctx, wallet)
	if err != nil || got.ID != made.ID || got.Name != WalletAccountName(wallet) {
		t.Fatalf("WalletAccount: %+v %v, want %+v", got, err, made)
	}
}
