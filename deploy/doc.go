// Package deploy holds the example configuration of a fleet (systemd
// units, the environment, nginx in front). It has no code: its tests run
// nginx from nginx.conf, as written but for loopback addresses and paths,
// in front of real API nodes, and hold the edge to what the nodes'
// caching headers allow.
package deploy
