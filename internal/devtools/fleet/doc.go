// Package fleet runs a whole attestd deployment on this machine from the
// built binary: nginx (deploy/nginx.conf) in front of several `attestd
// serve`, two `attestd index` (one leads on the advisory lock), webhook
// workers, the chain simulator producing traffic, Redis (one server or a
// three-master cluster) and PostgreSQL with a streaming read replica.
// `attestd cluster` (make cluster) and the fleet tests use it. Every
// process binds to 127.0.0.1 and is a real process that can be killed,
// stopped and restarted on the same addresses; Close stops all of them.
package fleet
