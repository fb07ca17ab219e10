// Package dataset publishes the whole index as files anyone can load and
// check (docs/dataset.md): one Parquet file per UTC day of the
// transparency log's leaves, in log order, each with a JSON manifest that
// carries the witnessed checkpoint the file was cut against and a range
// proof tying its rows to that checkpoint's root, and an index of all
// files.
//
// The Producer (attestd dataset) writes them to object storage through
// gocloud.dev/blob, one producer at a time fleet-wide by a PostgreSQL
// advisory lock: first every past day, then each day as it closes. The
// Server (on every API node) serves them from the store under /dataset/
// with ranges, validators and its own per-address guard, never from local
// disk.
//
// Invariants: a day's file is a function of the log (written twice, the
// same bytes); the file is written first, its manifest second and the
// index last, so a reader never sees a day whose file is partial; a
// manifest is written once and never changed.
package dataset
