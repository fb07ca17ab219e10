// Package logfixture is a transparency log held in memory for tests of the
// log's verifiers: a real RFC 6962 tree (golang.org/x/mod/sumdb/tlog) with
// checkpoints signed as C2SP signed notes, whose answers have the shapes of
// the API's log routes. It is the log as the verifiers see it, not a double
// of Postgres or Redis.
package logfixture
