// Package keyfile reads the files that settings name (the log's key, the
// receipt key, Solana CLI keypairs): bounded in size, regular files only,
// opened without blocking, so that a mistyped path to /dev/zero or a FIFO
// cannot hang or swell a start; its errors name the file and what is
// wrong with it, never its content, so that a path that points at the
// wrong secret does not leak it into logs.
package keyfile
