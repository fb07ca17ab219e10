package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"golang.org/x/mod/sumdb/tlog"
)

// Errors of VerifyFile. Every failure but a cancelled context's wraps at
// least one of them (test with errors.Is), with the detail in its
// message; a checkpoint that does not open also wraps the
// client.ErrCheckpoint* error that says why.
var (
	// ErrManifest: the manifest's checkpoint does not open with the
	// verifier, or its proof, range or day do not fit the checkpoint or
	// the file's own metadata.
	ErrManifest = errors.New("dataset manifest invalid")
	// ErrDigest: the file's SHA-256 (or length) is not the manifest's.
	ErrDigest = errors.New("dataset file digest mismatch")
	// ErrUnreadable: not a Parquet file of this dataset (its footer,
	// metadata, schema or a row group does not read).
	ErrUnreadable = errors.New("dataset file unreadable")
	// ErrRowOrder: a row is not where its leaf belongs (a row dropped,
	// repeated or moved), or the file holds more or fewer rows.
	ErrRowOrder = errors.New("dataset rows out of place")
	// ErrLeaf: the rows do not rebuild the checkpoint's root: some row's
	// fields do not give the log's leaf (named when the log's tiles are at
	// hand), or the manifest's range proof is not the log's.
	ErrLeaf = errors.New("dataset rows do not match the log")
)

// TileReader reads the log's leaf hashes (tlog.RecordHash of each leaf)
// of [first, end) in the tree of treeSize leaves, from its level-0 tiles.
// What it answers is checked: together with the manifest's range proof it
// must rebuild the checkpoint's root before a row is blamed.
type TileReader interface {
	LeafHashes(ctx context.Context, first, end, treeSize int64) ([]tlog.Hash, error)
}

// VerifyOptions are what VerifyFile checks a file against.
type VerifyOptions struct {
	// Verifier checks the manifest's checkpoint: the log's key and origin,
	// and the witnesses' cosignatures against its quorum.
	Verifier *client.LogVerifier
	// Manifest is the file's manifest (as published beside it, or got
	// elsewhere: it is not trusted, its checkpoint is checked).
	Manifest Manifest
	// FileSHA256 is the hex SHA-256 of the file's bytes, computed by the
	// caller while reading it ("": VerifyFile reads the file to compute it).
	FileSHA256 string
	// Tiles, when set, name the row that does not give the log's leaf;
	// nil: offline (the failure says only that some row differs).
	Tiles TileReader
}

// Report is what VerifyFile found. On a failure the fields known by then
// are set, and Problem is the error's message.
type Report struct {
	Rows           int64  // rows read
	Day            string // the manifest's day
	FirstIndex     int64  // the manifest's leaves [FirstIndex, LastIndex]
	LastIndex      int64
	CheckpointSize int64 // the size of the tree of the manifest's checkpoint
	Witnessed      int   // the verifier's witnesses whose cosignatures checked out
	// BadRow is the 1-based number of the first row found wrong, and
	// BadLeaf the log index of the leaf that belongs there; -1: none.
	BadRow, BadLeaf int64
	Problem         string
}

// verifyBatch is how many rows one read takes; locateWindow how many
// rows are compared with the log's leaf hashes at once.
const (
	verifyBatch  = 1024
	locateWindow = 4096
)

// VerifyFile checks a day's file (size bytes of r) against its manifest
// and the log, in this order, stopping at the first failure:
//
//  1. the manifest's checkpoint opens with opt.Verifier (the log's
//     signature and the witness quorum), the manifest's proof is of that
//     checkpoint's tree and its range fits it;
//  2. the file's SHA-256 and length are the manifest's (a mismatch is
//     reported with whatever follows, so the message names the bad row);
//  3. the file reads as Parquet with the columns of Row, and its
//     metadata names the checkpoint's origin and the manifest's day and
//     range;
//  4. row i (rows are numbered from 1 in messages) holds leaf
//     FirstIndex+i-1, and there are as many rows as the manifest says;
//  5. the rows' leaf hashes rebuild the checkpoint's root by the
//     manifest's range proof. If they do not and opt.Tiles is set, the
//     rows are read again beside the log's leaf hashes to name the first
//     that differs.
//
// Memory is bounded by a row group, not the file. A hostile file or
// manifest gives an error, never a panic.
func VerifyFile(ctx context.Context, r io.ReaderAt, size int64, opt VerifyOptions) (Report, error) {
	m := opt.Manifest
	v := &verification{opt: opt, r: r, size: size, rep: Report{Day: m.Day, FirstIndex: m.FirstIndex, LastIndex: m.LastIndex,
		BadRow: -1, BadLeaf: -1}}
	err := v.run(ctx)
	if err != nil {
		if v.digest != nil && !errors.Is(err, ErrDigest) {
			err = fmt.Errorf("%w; also %w", err, v.digest)
		}
		v.rep.Problem = err.Error()
	}
	return v.rep, err
}

// verification is one run of VerifyFile.
type verification struct {
	opt    VerifyOptions
	r      io.ReaderAt
	size   int64
	rep    Report
	cp     *client.Checkpoint
	proof  logformat.RangeProof
	digest error // the digest mismatch, reported with what follows
	file   *parquet.File
}

func (v *verification) run(ctx context.Context) error {
	if err := v.checkManifest(); err != nil {
		return err
	}
	if err := v.checkDigest(); err != nil {
		return err
	}
	if err := v.open(); err != nil {
		return err
	}
	root, err := v.rebuild(ctx)
	if err != nil {
		return err
	}
	if root != v.cp.Hash {
		if v.opt.Tiles == nil {
			return fmt.Errorf("%w: the %d rows do not rebuild the root of the checkpoint of %d leaves: some row's fields do not give the log's leaf "+
				"(or the manifest's range proof is not the log's); read beside the log's tiles (attestd verify --url) to name the row",
				ErrLeaf, v.rep.Rows, v.cp.Size)
		}
		return v.locate(ctx)
	}
	if v.digest != nil {
		return fmt.Errorf("%w (its rows do rebuild the checkpoint's root: the same leaves, but not the file the manifest describes)", v.digest)
	}
	return nil
}

// checkManifest is step 1: the checkpoint, the proof and the range.
func (v *verification) checkManifest() error {
	m := v.opt.Manifest
	if v.opt.Verifier == nil {
		return fmt.Errorf("%w: no log verifier to check its checkpoint with", ErrManifest)
	}
	if m.Format != Format {
		return fmt.Errorf("%w: format %q, want %q", ErrManifest, clipValue(m.Format), Format)
	}
	cp, err := v.opt.Verifier.OpenCheckpoint([]byte(m.Checkpoint))
	if err != nil {
		return fmt.Errorf("%w: its checkpoint: %w", ErrManifest, err)
	}
	v.cp = cp
	v.rep.CheckpointSize, v.rep.Witnessed = cp.Size, len(cp.Witnesses)
	if m.Proof.TreeSize != cp.Size {
		return fmt.Errorf("%w: its range proof is for a tree of %d leaves, its checkpoint of %d", ErrManifest, m.Proof.TreeSize, cp.Size)
	}
	if _, err := ParseDay(m.Day); err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if m.FirstIndex < 0 || m.LastIndex < m.FirstIndex || m.LastIndex >= cp.Size {
		return fmt.Errorf("%w: leaves %d to %d are not a range of the checkpoint's tree of %d leaves", ErrManifest, m.FirstIndex, m.LastIndex, cp.Size)
	}
	if m.Rows != m.LastIndex-m.FirstIndex+1 {
		return fmt.Errorf("%w: %d rows for the %d leaves %d to %d", ErrManifest, m.Rows, m.LastIndex-m.FirstIndex+1, m.FirstIndex, m.LastIndex)
	}
	if v.proof, err = m.Proof.RangeProof(); err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if _, err := logformat.NewRangeHasher(cp.Size, m.FirstIndex, m.LastIndex+1, v.proof); err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	return nil
}

// checkDigest is step 2: a mismatch is kept for the report, not returned
// (but a file that cannot be read is).
func (v *verification) checkDigest() error {
	m := v.opt.Manifest
	got := strings.ToLower(v.opt.FileSHA256)
	if got == "" {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(v.r, 0, v.size)); err != nil {
			return fmt.Errorf("%w: read it: %w", ErrUnreadable, err)
		}
		got = hex.EncodeToString(h.Sum(nil))
	}
	switch {
	case v.size != m.Bytes:
		v.digest = fmt.Errorf("%w: the file is %d bytes, the manifest says %d (SHA-256 %s, the manifest's %s)", ErrDigest, v.size, m.Bytes, got, clipValue(m.SHA256))
	case got != strings.ToLower(m.SHA256):
		v.digest = fmt.Errorf("%w: the file's SHA-256 is %s, the manifest's %s", ErrDigest, got, clipValue(m.SHA256))
	}
	return nil
}

// open is step 3: the footer, the metadata against the manifest and
// checkpoint, and the schema.
func (v *verification) open() error {
	f, err := openParquet(v.r, v.size)
	if err != nil {
		return err
	}
	v.file = f
	meta, err := metaOf(f)
	if err != nil {
		return err
	}
	m := v.opt.Manifest
	switch {
	case meta.Origin != v.cp.Origin:
		return fmt.Errorf("%w: the file is of log %q, the checkpoint of %q", ErrManifest, clipValue(meta.Origin), v.cp.Origin)
	case meta.Day.String() != m.Day:
		return fmt.Errorf("%w: the file is of day %s, the manifest of %s", ErrManifest, meta.Day, m.Day)
	case meta.First != m.FirstIndex || meta.End != m.LastIndex+1:
		return fmt.Errorf("%w: the file holds leaves %d to %d, the manifest %d to %d", ErrManifest, meta.First, meta.End-1, m.FirstIndex, m.LastIndex)
	}
	return checkSchema(f.Schema())
}

// rebuild is steps 4 and 5: each row in its place, its leaf hash into the
// range hasher; the root it rebuilds.
func (v *verification) rebuild(ctx context.Context) (tlog.Hash, error) {
	m := v.opt.Manifest
	h, err := logformat.NewRangeHasher(v.cp.Size, m.FirstIndex, m.LastIndex+1, v.proof)
	if err != nil {
		return tlog.Hash{}, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	n, err := eachRow(ctx, v.file, func(i int64, row *Row) error {
		v.rep.Rows = i + 1
		want := m.FirstIndex + i
		if i >= m.Rows {
			v.bad(i, want)
			return fmt.Errorf("%w: row %d holds leaf %d beyond the day's last leaf %d: the file holds more than the manifest's %d rows",
				ErrRowOrder, i+1, row.LogIndex, m.LastIndex, m.Rows)
		}
		if row.LogIndex != want {
			v.bad(i, want)
			return fmt.Errorf("%w: row %d holds leaf %d where leaf %d belongs (%s)", ErrRowOrder, i+1, row.LogIndex, want, misplaced(row.LogIndex, want))
		}
		leaf, err := row.Leaf()
		if err != nil {
			v.bad(i, want)
			return fmt.Errorf("%w: row %d (leaf %d): its fields give no leaf: %s", ErrLeaf, i+1, want,
				strings.TrimPrefix(err.Error(), fmt.Sprintf("row %d: ", row.LogIndex)))
		}
		return h.Add(tlog.RecordHash(leaf))
	})
	if err != nil {
		return tlog.Hash{}, err
	}
	v.rep.Rows = n
	if n != m.Rows {
		v.bad(n, m.FirstIndex+n)
		return tlog.Hash{}, fmt.Errorf("%w: the file ends after %d rows: leaves %d to %d are missing (the manifest has %d rows)",
			ErrRowOrder, n, m.FirstIndex+n, m.LastIndex, m.Rows)
	}
	return h.Root()
}

// bad records row i (0-based) and the leaf that belongs there.
func (v *verification) bad(i, leaf int64) { v.rep.BadRow, v.rep.BadLeaf = i+1, leaf }

// misplaced says what a leaf found where another belongs suggests.
func misplaced(got, want int64) string {
	if got < want {
		return "a row repeated, or rows out of order"
	}
	return fmt.Sprintf("leaf %d is missing, or rows are out of order", want)
}

// locate reads the rows again beside the log's leaf hashes: the first
// row whose leaf hash differs is named once the log's hashes are shown,
// with the manifest's proof, to rebuild the checkpoint's root (a node's
// tiles are not trusted either).
func (v *verification) locate(ctx context.Context) error {
	m := v.opt.Manifest
	h, err := logformat.NewRangeHasher(v.cp.Size, m.FirstIndex, m.LastIndex+1, v.proof)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	var (
		window  = make([]Row, 0, locateWindow)
		start   = m.FirstIndex // the leaf of window[0]
		badAt   = int64(-1)
		badRow  Row
		tileErr error
	)
	flush := func() error {
		if len(window) == 0 {
			return nil
		}
		end := start + int64(len(window))
		hashes, err := v.opt.Tiles.LeafHashes(ctx, start, end, v.cp.Size)
		if err == nil && len(hashes) != len(window) {
			err = fmt.Errorf("%d leaf hashes for the %d leaves %d to %d", len(hashes), len(window), start, end-1)
		}
		if err != nil {
			return err
		}
		for i := range window {
			leaf, _ := window[i].Leaf() // rebuild read each row's leaf
			if badAt < 0 && tlog.RecordHash(leaf) != hashes[i] {
				badAt, badRow = start+int64(i), window[i]
			}
			if err := h.Add(hashes[i]); err != nil {
				return err
			}
		}
		start, window = end, window[:0]
		return nil
	}
	_, err = eachRow(ctx, v.file, func(_ int64, row *Row) error {
		if window = append(window, *row); len(window) == cap(window) {
			tileErr = flush()
			return tileErr
		}
		return nil
	})
	if err == nil {
		tileErr = flush()
	}
	if err != nil && tileErr == nil {
		return err // the file, read a second time
	}
	if tileErr != nil {
		return fmt.Errorf("%w: the %d rows do not rebuild the root of the checkpoint of %d leaves, and reading the log's leaves to name the row that differs failed: %w",
			ErrLeaf, v.rep.Rows, v.cp.Size, tileErr)
	}
	return v.blame(h, badAt, badRow)
}

// blame names the row that differs from the log's leaves, once those are
// shown to be the log's.
func (v *verification) blame(h *logformat.RangeHasher, badAt int64, badRow Row) error {
	root, err := h.Root()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLeaf, err)
	}
	first := v.opt.Manifest.FirstIndex
	switch {
	case root != v.cp.Hash:
		return fmt.Errorf("%w: the rows do not rebuild the root of the checkpoint of %d leaves, and neither do the log's leaves read from its tiles: "+
			"the manifest's range proof is not the log's (or the tiles are not)", ErrLeaf, v.cp.Size)
	case badAt < 0:
		return fmt.Errorf("%w: every row gives the log's leaf, yet they did not rebuild the checkpoint's root: the file changed while it was read", ErrLeaf)
	}
	v.bad(badAt-first, badAt)
	return fmt.Errorf("%w: row %d (leaf %d): its fields do not give the log's leaf: %s", ErrLeaf, badAt-first+1, badAt, describeRow(badRow))
}

// describeRow writes a row's leaf fields.
func describeRow(r Row) string {
	return fmt.Sprintf("pda=%s agentPda=%s actionType=%s actionHash=%s txSignature=%s slot=%d timestamp=%s",
		clipValue(r.PDA), clipValue(r.AgentPDA), clipValue(r.ActionType), clipValue(r.ActionHash), clipValue(r.TxSignature), r.Slot,
		r.Timestamp.UTC().Format(time.RFC3339Nano))
}

// clipValue quotes a value from a file or a manifest for a message when it is
// not plain, and cuts it at 100 bytes.
func clipValue(s string) string {
	cut := ""
	if len(s) > 100 {
		s, cut = s[:100], "..."
	}
	if q := strconv.Quote(s); q[1:len(q)-1] != s || s == "" || strings.ContainsAny(s, " =") {
		return q + cut
	}
	return s + cut
}

// maxParquetFooter bounds a file's footer (its metadata): a day of millions of
// rows has a few hundred row groups, whose metadata fits in far less.
const maxParquetFooter = 16 << 20

// openParquet opens a Parquet file: its footer read, its pages left for
// later. The footer's length is checked before the reader allocates it.
func openParquet(r io.ReaderAt, size int64) (*parquet.File, error) {
	const magic = "PAR1"
	if size < int64(2*len(magic)+4) {
		return nil, fmt.Errorf("%w: %d bytes, not a Parquet file", ErrUnreadable, size)
	}
	var tail [8]byte
	if n, err := r.ReadAt(tail[:], size-8); n != len(tail) {
		return nil, fmt.Errorf("%w: read its footer: %w", ErrUnreadable, err)
	}
	footer := int64(binary.LittleEndian.Uint32(tail[:4]))
	if string(tail[4:]) != magic || footer > size-12 || footer > maxParquetFooter {
		return nil, fmt.Errorf("%w: no Parquet footer at its end (not a Parquet file, or cut short)", ErrUnreadable)
	}
	meta := make([]byte, footer)
	if n, err := r.ReadAt(meta, size-8-footer); n != len(meta) {
		return nil, fmt.Errorf("%w: read its footer: %w", ErrUnreadable, err)
	}
	if sc := (thriftScan{b: meta}); sc.structure() != nil || sc.off != len(meta) {
		return nil, fmt.Errorf("%w: its footer is not Parquet metadata", ErrUnreadable)
	}
	var f *parquet.File
	err := recoverParquet(func() (err error) {
		f, err = parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return f, nil
}

// chunkStart is where a column chunk's pages start, as the Parquet
// package reads them: its dictionary page when it has one.
func chunkStart(md format.ColumnMetaData) int64 {
	if md.DictionaryPageOffset != 0 {
		return md.DictionaryPageOffset
	}
	return md.DataPageOffset
}

// Bounds of a page, which the Parquet package allocates as its header
// declares: its bytes (compressed or not) and its values. A file of this
// dataset has pages far smaller.
const (
	maxPageBytes  = 64 << 20
	maxPageValues = 1 << 20
	maxPageHeader = 64 << 10
)

// checkPages reads the page headers of each column chunk of a row group
// (of a file of size bytes) before the Parquet package does: each chunk
// must lie within the file, each page within its chunk, its sizes and
// counts within bounds. A header is read from a window of the file that
// grows (up to maxPageHeader) only while it is cut short, and serves the
// headers that follow it: however small the pages, the chunk's bytes are
// read about once.
func checkPages(r io.ReaderAt, size int64, rg format.RowGroup) error {
	buf := make([]byte, 0, maxPageHeader)
	var bufAt int64 // the file offset of buf[0]
	for _, c := range rg.Columns {
		md := c.MetaData
		start := chunkStart(md)
		if start < 4 || md.TotalCompressedSize < 0 || md.TotalCompressedSize > size-start || md.NumValues < 0 || rg.NumRows < 0 {
			return fmt.Errorf("column %s lies outside the file", clipValue(strings.Join(md.PathInSchema, ".")))
		}
		end := start + md.TotalCompressedSize
		for pos, want := start, int64(1<<10); pos < end; {
			if pos < bufAt || pos+min(want, end-pos) > bufAt+int64(len(buf)) {
				n, err := r.ReadAt(buf[:min(want, end-pos)], pos)
				if int64(n) < min(want, end-pos) {
					return fmt.Errorf("read byte %d: %w", pos, err)
				}
				buf, bufAt = buf[:n], pos
			}
			comp, uncomp, values := int64(-1), int64(-1), int64(0)
			sc := thriftScan{b: buf[pos-bufAt:], field: func(path []int16, v int64) {
				switch {
				case len(path) == 1 && path[0] == 2:
					uncomp = v
				case len(path) == 1 && path[0] == 3:
					comp = v
				case len(path) == 2 && path[0] >= 5 && path[0] <= 8 && path[1] <= 3:
					values = max(values, v) // num_values (and num_nulls, num_rows)
				}
			}}
			err := sc.structure()
			if errors.Is(err, errThriftShort) && int64(len(sc.b)) < min(maxPageHeader, end-pos) {
				want = min(maxPageHeader, 2*int64(len(sc.b))+1<<10)
				continue // read a wider window
			}
			if err != nil || comp < 0 || comp > end-pos-int64(sc.off) || uncomp < 0 || uncomp > maxPageBytes || values < 0 || values > maxPageValues {
				return fmt.Errorf("column %s: the page header at byte %d does not hold (a page beyond its chunk, or too large)",
					clipValue(strings.Join(md.PathInSchema, ".")), pos)
			}
			pos, want = pos+int64(sc.off)+comp, 1<<10
		}
	}
	return nil
}

// thriftScan walks compact-protocol Thrift (a footer, a page header)
// before the Parquet package decodes it, since that allocates what the
// lengths and counts declare: each length must lie within the bytes, the
// lists hold at most maxThriftItems items in all, nesting is bounded.
// field, when set, gets each integer with its path of field ids (-1: a
// list's item).
type thriftScan struct {
	b     []byte
	off   int
	items uint64
	path  []int16
	field func(path []int16, v int64)
}

// maxThriftItems bounds the items of a footer's lists, all together: a
// row group's metadata holds about a hundred. The errors of thriftScan
// are bytes that are not Thrift, or are cut short.
const maxThriftItems = 1 << 20

var (
	errThrift      = errors.New("malformed thrift")
	errThriftShort = errors.New("thrift cut short")
)

func (s *thriftScan) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.b[s.off:])
	if n == 0 {
		return 0, errThriftShort
	}
	if n < 0 {
		return 0, errThrift
	}
	s.off += n
	return v, nil
}

func (s *thriftScan) skip(n uint64) error {
	if n > uint64(len(s.b)-s.off) {
		return errThriftShort
	}
	s.off += int(n)
	return nil
}

// next is the next byte.
func (s *thriftScan) next() (byte, error) {
	if s.off >= len(s.b) {
		return 0, errThriftShort
	}
	s.off++
	return s.b[s.off-1], nil
}

// structure walks a struct, up to its stop byte.
func (s *thriftScan) structure() error {
	var id int16
	for {
		h, err := s.next()
		if err != nil || h == 0 {
			return err
		}
		if d := int16(h >> 4); d != 0 {
			id += d
		} else {
			v, err := s.uvarint()
			if err != nil {
				return err
			}
			id = int16(int64(v>>1) ^ -int64(v&1))
		}
		if t := h & 0x0f; t != 1 && t != 2 { // a bool field's value is its type
			if err := s.value(id, t); err != nil {
				return err
			}
		}
	}
}

// value walks one value of type t at path element id.
func (s *thriftScan) value(id int16, t byte) error {
	if len(s.path) >= 32 {
		return errThrift
	}
	s.path = append(s.path, id)
	defer func() { s.path = s.path[:len(s.path)-1] }()
	switch t {
	case 1, 2, 3: // a bool in a list, a byte
		return s.skip(1)
	case 4, 5, 6:
		v, err := s.uvarint()
		if err == nil && s.field != nil {
			s.field(s.path, int64(v>>1)^-int64(v&1))
		}
		return err
	case 7:
		return s.skip(8)
	case 8:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		return s.skip(n)
	case 9, 10, 11:
		return s.list(t)
	case 12:
		return s.structure()
	}
	return errThrift
}

// list walks a list, a set or a map (t 11).
func (s *thriftScan) list(t byte) (err error) {
	var n uint64
	if t == 11 {
		if n, err = s.uvarint(); err != nil || n == 0 {
			return err
		}
	}
	h, err := s.next()
	if err != nil {
		return err
	}
	types := []byte{h >> 4, h & 0x0f} // a map's key and value
	if t != 11 {
		if types, n = types[1:], uint64(h>>4); n == 15 {
			n, err = s.uvarint()
		}
	}
	switch {
	case err != nil:
		return err
	case n > uint64(len(s.b)-s.off):
		return errThriftShort
	case s.items+n > maxThriftItems:
		return errThrift
	}
	s.items += n
	for range n {
		for _, et := range types {
			if err := s.value(-1, et); err != nil {
				return err
			}
		}
	}
	return nil
}

// recoverParquet runs fn, turning a panic of the Parquet reader (on a hostile
// file) into an error.
func recoverParquet(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the Parquet reader failed: %v", p)
		}
	}()
	return fn()
}

// ReadMeta reads what a day's file says of itself (its key-value
// metadata): its day, its log's origin and its leaves. It reads the
// footer only.
func ReadMeta(r io.ReaderAt, size int64) (FileMeta, error) {
	f, err := openParquet(r, size)
	if err != nil {
		return FileMeta{}, err
	}
	return metaOf(f)
}

// metaOf reads f's attestd.* metadata.
func metaOf(f *parquet.File) (FileMeta, error) {
	var v [5]string
	for i, k := range []string{"attestd.format", "attestd.day", "attestd.origin", "attestd.first_index", "attestd.end_index"} {
		var ok bool
		if v[i], ok = f.Lookup(k); !ok {
			return FileMeta{}, fmt.Errorf("%w: no %s in its metadata (not a file of this dataset)", ErrUnreadable, k)
		}
	}
	if v[0] != Format {
		return FileMeta{}, fmt.Errorf("%w: format %s, want %s", ErrUnreadable, clipValue(v[0]), Format)
	}
	day, err := ParseDay(v[1])
	if err != nil {
		return FileMeta{}, fmt.Errorf("%w: attestd.day: %w", ErrUnreadable, err)
	}
	first, ok1 := logformat.Decimal(v[3], 1<<62)
	end, ok2 := logformat.Decimal(v[4], 1<<62)
	if !ok1 || !ok2 || end <= first {
		return FileMeta{}, fmt.Errorf("%w: attestd.first_index %s and attestd.end_index %s are not a range of leaves", ErrUnreadable,
			clipValue(v[3]), clipValue(v[4]))
	}
	return FileMeta{Day: day, Origin: v[2], First: first, End: end}, nil
}

// checkSchema checks that the file has each column of Row, of its type
// (a hostile schema can make the Parquet package panic: guarded).
func checkSchema(s *parquet.Schema) error {
	want := parquet.SchemaOf(Row{})
	for _, path := range want.Columns() {
		name := strings.Join(path, ".")
		w, _ := want.Lookup(path...)
		var problem string
		err := recoverParquet(func() error {
			got, ok := s.Lookup(path...)
			switch {
			case !ok:
				problem = "its schema has no column " + name
			case !parquet.EqualNodes(w.Node, got.Node):
				problem = fmt.Sprintf("its column %s is %s, want %s", name, clipValue(got.Node.Type().String()), w.Node.Type())
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w: its schema, column %s: %w", ErrUnreadable, name, err)
		}
		if problem != "" {
			return fmt.Errorf("%w: %s", ErrUnreadable, problem)
		}
	}
	return nil
}

// eachRow calls fn with each row of f in order and its 0-based number,
// reading one row group at a time in batches, and returns how many rows
// it read. An error of fn stops it and is returned as it is.
func eachRow(ctx context.Context, f *parquet.File, fn func(i int64, row *Row) error) (int64, error) {
	buf := make([]Row, verifyBatch)
	var n int64
	groups := f.RowGroups()
	for g, rg := range groups {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		err := checkPages(f, f.Size(), f.Metadata().RowGroups[g])
		if err != nil {
			err = readError{err}
		} else {
			err = eachRowOf(ctx, rg, buf, func(row *Row) error {
				err := fn(n, row)
				n++
				return err
			})
		}
		var re readError
		if errors.As(err, &re) {
			return n, fmt.Errorf("%w: row group %d of %d (from row %d): %w", ErrUnreadable, g+1, len(groups), n+1, re.err)
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// readError is a row group that does not read.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

// eachRowOf calls fn with each row of one row group.
func eachRowOf(ctx context.Context, rg parquet.RowGroup, buf []Row, fn func(*Row) error) error {
	var rd *parquet.GenericReader[Row]
	if err := recoverParquet(func() error { rd = parquet.NewGenericRowGroupReader[Row](rg); return nil }); err != nil {
		return readError{err}
	}
	defer func() { _ = recoverParquet(rd.Close) }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		clear(buf)
		var k int
		rerr := recoverParquet(func() (err error) { k, err = rd.Read(buf); return err })
		for i := range min(k, len(buf)) {
			if err := fn(&buf[i]); err != nil {
				return err
			}
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return nil
		case rerr != nil:
			return readError{rerr}
		case k == 0:
			return readError{io.ErrNoProgress}
		}
	}
}
