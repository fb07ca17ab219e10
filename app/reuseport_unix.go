//go:build unix

package app

import "golang.org/x/sys/unix"

// setReusePort sets SO_REUSEPORT on a socket before it binds.
func setReusePort(fd uintptr) error {
	return unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
}
