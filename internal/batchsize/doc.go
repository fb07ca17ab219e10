// Package batchsize provides the size of the next batch a writer applies
// to PostgreSQL: its configured most, halved while batches outlive their
// deadline and doubled back once they apply again, so that a loaded
// server slows a backfill down rather than stopping it (the same batch,
// retried at the same size, would time out forever).
package batchsize
