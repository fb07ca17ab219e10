// Package devstack starts throwaway PostgreSQL and Redis servers (and a
// small Redis Cluster) on free loopback ports for `attestd local` and the
// test suite, installing the Debian packages when they are missing and the
// process runs as root. Servers are child processes and die with their
// parent.
package devstack
