// Package buildinfo holds the version of the binary, set at link time.
package buildinfo
