// Package seed writes realistic, signed demo data through the store's one
// write path: agents with real Ed25519 keys and attestations of every action
// type over the last 90 days, some in privacy mode, some agents revoked or
// with policy updates. The same seed gives the same data.
package seed
