// Package devstack starts throwaway PostgreSQL and Redis servers (and a
// small Redis Cluster, for tests of cluster mode) on free loopback ports,
// for `attestd local` (make run) and for the test suite. It
// finds the server binaries on the machine, installs the Debian packages
// postgresql and redis-server with apt-get when they are missing and the
// process runs as root, and otherwise says what to install. Servers run as
// child processes and die with their parent.
package devstack
