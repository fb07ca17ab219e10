// Package backup takes and restores backups of attestd's PostgreSQL
// database with PostgreSQL's own tools (pg_dump in its custom format,
// pg_restore), as `attestd backup` and `attestd restore` run them
// (docs/operations.md, Backups and Restore).
//
// A backup is a consistent snapshot (pg_dump reads in one repeatable-read
// transaction, whose snapshot Take exports so that what it records of the
// database, the log's size and the newest slot, is the dump's), recorded in the database it was taken of once its file is
// complete, so that the newest backup's age is a metric. A restore goes
// into an empty database, brings its schema up to this binary's
// migrations, and holds the transparency log: no node serves a checkpoint
// until the log's appender has asked the witnesses which size they
// cosigned and the log has regrown to it from the chain.
package backup
