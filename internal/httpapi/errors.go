package httpapi

import (
	"errors"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/store"
)

// StoreError maps a failed store call to its answer: 503 UNAVAILABLE when
// the database cannot be reached, otherwise the error itself (an internal
// error: logged with the request id, answered without detail).
func StoreError(err error) error {
	if err != nil && store.IsUnavailable(err) {
		return apierror.Unavailable("the database is unavailable; try again shortly")
	}
	return err
}

// LoadError is StoreError for cache loaders: a missing record becomes
// cache.ErrNotFound, which the cache keeps for the epoch.
func LoadError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return cache.ErrNotFound
	}
	return StoreError(err)
}
