package buildinfo

// Version is the running build's version; `make build` sets it with
// -ldflags "-X github.com/attestd/attestd/internal/buildinfo.Version=...".
var Version = "v0.1.0-dev"
