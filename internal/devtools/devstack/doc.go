// Package devstack starts throwaway PostgreSQL and Redis servers (and a
// small Redis Cluster) on free loopback ports for `attestd local` and the
// test suite, installing the Debian packages when they are missing and the
// process runs as root. Servers are child processes and die with their
// parent. As root, PostgreSQL runs as an unprivileged account, and its data
// moves to a directory of that account's (stable for the directory asked
// for) when the account cannot reach the one asked for. Benchmarks take
// their servers and scratch databases from StartScratch and CreateDatabase.
package devstack
