//go:build !unix

package app

import "errors"

// setReusePort: SO_REUSEPORT exists on Unix systems only.
func setReusePort(uintptr) error {
	return errors.New("ATTESTD_REUSE_PORT=on: SO_REUSEPORT is not available on this system")
}
