// Package pglock elects one process fleet-wide with a PostgreSQL
// session-level advisory lock: a campaigner opens a dedicated connection,
// tries the lock until it holds it, leads while the connection answers
// pings, and closes the connection (releasing the lock) when its term
// ends. The indexer's writer and the transparency log's appender use it.
package pglock
