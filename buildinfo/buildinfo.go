// Package buildinfo carries the service version, set at link time with
// -ldflags "-X github.com/attestd/attestd/buildinfo.Version=v1.2.3".
package buildinfo

// Version is the running build's version.
var Version = "v0.1.0-dev"
