package dataset

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// RowGroupRows is the number of rows in each row group of a file but the
// last: about 3 MiB of column data, so a reader that wants one slice of
// a day (by log index or time: each row group carries the columns'
// minimum and maximum) fetches a few MiB with a range request, and a
// writer holds no more than one row group in memory, however large the day.
const RowGroupRows = 32768

// Format names this layout of files and documents; a change of columns or
// of their meaning gets a new one (and a new prefix).
const Format = "attestd-dataset/v1"

// FileMeta is what a file says of itself in its key-value metadata, so a
// file found alone names its day, range and log.
type FileMeta struct {
	Day        Day
	Origin     string // the log's origin
	First, End int64  // the leaves [First, End)
}

// Schema is the files' Parquet schema, as the manifest shows it.
func Schema() string { return parquet.SchemaOf(Row{}).String() }

// FileWriter writes one day's file: rows in log order, zstd-compressed,
// RowGroupRows per row group. zstd at SpeedBetterCompression: most of a
// row is random base58 and hex, which only entropy coding shrinks (at
// SpeedDefault a file was larger than the gzip'd JSON pages of its rows;
// bench/dataset), and it still encodes far faster than the log is read. The bytes are a function of the rows and
// the metadata only (no clock, no build in them): written twice, the same.
type FileWriter struct {
	pw     *parquet.GenericWriter[Row]
	count  *countingWriter
	meta   FileMeta
	rows   int64
	closed bool
}

type countingWriter struct {
	w   io.Writer
	sum hash.Hash
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// NewFileWriter starts a file on w.
func NewFileWriter(w io.Writer, meta FileMeta) *FileWriter {
	cw := &countingWriter{w: w, sum: sha256.New()}
	pw := parquet.NewGenericWriter[Row](cw,
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedBetterCompression}),
		parquet.MaxRowsPerRowGroup(RowGroupRows),
		parquet.CreatedBy("attestd", "dataset", "v1"),
		parquet.KeyValueMetadata("attestd.format", Format),
		parquet.KeyValueMetadata("attestd.day", meta.Day.String()),
		parquet.KeyValueMetadata("attestd.origin", meta.Origin),
		parquet.KeyValueMetadata("attestd.first_index", strconv.FormatInt(meta.First, 10)),
		parquet.KeyValueMetadata("attestd.end_index", strconv.FormatInt(meta.End, 10)),
	)
	return &FileWriter{pw: pw, count: cw, meta: meta}
}

// Write appends rows, which must continue the log from where the last
// call ended.
func (f *FileWriter) Write(rows []Row) error {
	for i := range rows {
		if want := f.meta.First + f.rows + int64(i); rows[i].LogIndex != want {
			return fmt.Errorf("dataset file %s: row of leaf %d where leaf %d belongs", f.meta.Day, rows[i].LogIndex, want)
		}
	}
	if _, err := f.pw.Write(rows); err != nil {
		return fmt.Errorf("dataset file %s: write rows: %w", f.meta.Day, err)
	}
	f.rows += int64(len(rows))
	return nil
}

// Written is what a finished file holds.
type Written struct {
	Rows   int64
	Bytes  int64
	SHA256 [sha256.Size]byte
}

// Close writes the footer. The file must hold every leaf of its range.
func (f *FileWriter) Close() (Written, error) {
	if f.closed {
		return Written{}, fmt.Errorf("dataset file %s: closed twice", f.meta.Day)
	}
	f.closed = true
	if f.rows != f.meta.End-f.meta.First {
		return Written{}, fmt.Errorf("dataset file %s: %d rows for the %d leaves [%d, %d)", f.meta.Day, f.rows,
			f.meta.End-f.meta.First, f.meta.First, f.meta.End)
	}
	if err := f.pw.Close(); err != nil {
		return Written{}, fmt.Errorf("dataset file %s: close: %w", f.meta.Day, err)
	}
	w := Written{Rows: f.rows, Bytes: f.count.n}
	copy(w.SHA256[:], f.count.sum.Sum(nil))
	return w, nil
}
