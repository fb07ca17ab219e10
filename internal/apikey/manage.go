package apikey

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/store"
)

// MaxLabelLen is the longest label, in characters.
const MaxLabelLen = 100

// ValidateLabel checks a key label: valid UTF-8, at most MaxLabelLen
// characters, no control characters.
func ValidateLabel(label string) error {
	if !utf8.ValidString(label) {
		return errors.New("label must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(label); n > MaxLabelLen {
		return fmt.Errorf("label must be at most %d characters, got %d", MaxLabelLen, n)
	}
	for _, r := range label {
		if unicode.IsControl(r) {
			return errors.New("label must not contain control characters")
		}
	}
	return nil
}

// Store is the store the service manages keys in (accounts are managed
// there directly).
func (s *Service) Store() *store.Store { return s.st }

// Created is a key just made: Secret is shown once and never stored.
type Created struct {
	Secret string
	Key    store.APIKey
}

// ErrForbidden: the key acting may not do this (a key of a higher role is
// out of its reach).
var ErrForbidden = errors.New("a key cannot act on a key of a higher role")

// Create makes an admin key for the account, as the operator's CLI does.
// It fails with store.ErrKeyLimit when the account holds the most active
// keys allowed.
func (s *Service) Create(ctx context.Context, accountID int64, label string) (Created, error) {
	return s.CreateWithRole(ctx, accountID, label, RoleAdmin)
}

// CreateWithRole makes a key of the given role for the account. Who may
// ask for which role is the caller's decision (POST /keys: an admin key).
func (s *Service) CreateWithRole(ctx context.Context, accountID int64, label string, role Role) (Created, error) {
	if err := ValidateLabel(label); err != nil {
		return Created{}, err
	}
	if !role.Valid() {
		return Created{}, fmt.Errorf("role %q: want %q or %q", role, RoleRead, RoleAdmin)
	}
	for attempt := 0; ; attempt++ {
		nk, err := Generate()
		if err != nil {
			return Created{}, err
		}
		k, err := s.st.InsertKey(ctx, accountID, nk.Prefix, nk.Hash, label, string(role), s.opt.MaxActiveKeys)
		if errors.Is(err, store.ErrPrefixTaken) && attempt < 5 {
			continue // 8 base58 characters collide rarely; draw again
		}
		if err != nil {
			return Created{}, err
		}
		// A node may hold a "no such key" answer for this prefix.
		s.announce(ctx, k.Prefix)
		return Created{Secret: nk.Secret, Key: k}, nil
	}
}

// List returns a page of the account's keys (newest first) and their number.
func (s *Service) List(ctx context.Context, accountID int64, limit, offset int) ([]store.APIKey, int64, error) {
	return s.st.ListKeys(ctx, accountID, limit, offset)
}

// Revoke revokes the key with this prefix, whatever its role (the
// operator's CLI), of the given account only when accountID > 0 (another
// account's key is store.ErrNotFound), and tells every node to stop
// accepting it.
func (s *Service) Revoke(ctx context.Context, prefix string, accountID int64) (store.APIKey, error) {
	return s.revoke(ctx, prefix, accountID, nil)
}

// RevokeAs revokes a key of p's account on p's behalf: a key of a higher
// role than p's is ErrForbidden (and stays valid); another account's key
// or an unknown prefix is store.ErrNotFound.
func (s *Service) RevokeAs(ctx context.Context, p Principal, prefix string) (store.APIKey, error) {
	if p.AccountID <= 0 || !p.Role.Valid() {
		return store.APIKey{}, ErrForbidden
	}
	k, err := s.revoke(ctx, prefix, p.AccountID, p.Role.atMost())
	if errors.Is(err, store.ErrNotFound) {
		// Say why when the key is the account's own but above p's reach.
		if other, lerr := s.st.KeyByPrefix(ctx, prefix); lerr == nil && other.AccountID == p.AccountID {
			return store.APIKey{}, ErrForbidden
		}
	}
	return k, err
}

func (s *Service) revoke(ctx context.Context, prefix string, accountID int64, roles []string) (store.APIKey, error) {
	if !ValidPrefix(prefix) {
		return store.APIKey{}, store.ErrNotFound
	}
	k, err := s.st.RevokeKey(ctx, prefix, accountID, roles)
	if err != nil {
		return k, err
	}
	s.announce(ctx, prefix)
	return k, nil
}
