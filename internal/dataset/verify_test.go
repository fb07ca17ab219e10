package dataset_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/mr-tron/base58"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// vfOrigin is the test log's origin (its tiles are at /log).
const vfOrigin = "attestd.test/log"

// vfLog is a transparency log in memory: random attestations, the stored
// hashes of their leaves (tlog.StoredHashes), a log key and three
// witnesses' cosignature keys.
type vfLog struct {
	atts      []attestation.Attestation
	hashes    []tlog.Hash
	signer    note.Signer
	vkey      string
	witnesses []*logformat.CosignatureSigner
	wkeys     []string
}

func newVFLog(t testing.TB, n int) *vfLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, vfOrigin)
	vfMust(t, err)
	signer, err := note.NewSigner(skey)
	vfMust(t, err)
	l := &vfLog{signer: signer, vkey: vkey}
	for i := range 3 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		w := logformat.NewCosignatureSigner(fmt.Sprintf("w%d.test/w", i+1), priv)
		l.witnesses, l.wkeys = append(l.witnesses, w), append(l.wkeys, w.String())
	}
	rng := mrand.New(mrand.NewPCG(7, uint64(n)))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	agents := []string{base58.Encode(random(32)), base58.Encode(random(32)), base58.Encode(random(32))}
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for i := range n {
		a := attestation.Attestation{PDA: base58.Encode(random(32)), AgentPDA: agents[i%len(agents)], AgentID: "agent-" + strconv.Itoa(i%3),
			ActionType: attestation.ActionType(rng.IntN(attestation.NumActionTypes)), ActionHash: hex.EncodeToString(random(32)),
			TxSignature: base58.Encode(random(64)), Slot: uint64(1000 + 3*i), Timestamp: attestation.At(start.Add(time.Duration(i) * time.Minute)),
			PrivacyMode: i%4 == 0, AgentSignature: base58.Encode(random(64)), Commitment: attestation.Finalized}
		leaf, err := attestation.LogLeaf(a)
		vfMust(t, err)
		hs, err := tlog.StoredHashes(int64(i), leaf, l.reader())
		vfMust(t, err)
		l.hashes = append(l.hashes, hs...)
		l.atts = append(l.atts, a)
	}
	return l
}

func vfMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (l *vfLog) reader() tlog.HashReaderFunc {
	return func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(l.hashes)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = l.hashes[x]
		}
		return out, nil
	}
}

// checkpoint is the checkpoint of the first size leaves, signed with the
// log's key and cosigned by the first k witnesses.
func (l *vfLog) checkpoint(t testing.TB, size int64, k int) string {
	t.Helper()
	root, err := tlog.TreeHash(size, l.reader())
	vfMust(t, err)
	signed, err := logformat.Checkpoint{Origin: vfOrigin, Size: size, Root: root}.Sign(l.signer)
	vfMust(t, err)
	text, _, _ := strings.Cut(signed, "\n\n")
	for _, w := range l.witnesses[:k] {
		b, err := note.Sign(&note.Note{Text: text + "\n"}, w)
		vfMust(t, err)
		_, line, _ := strings.Cut(string(b), "\n\n")
		signed += line
	}
	return signed
}

// verifier trusts the log's key and needs quorum of the first n witnesses.
func (l *vfLog) verifier(t testing.TB, quorum, n int) *client.LogVerifier {
	t.Helper()
	v, err := client.NewLogVerifier(l.vkey)
	vfMust(t, err)
	v, err = v.WithWitnesses(quorum, l.wkeys[:n]...)
	vfMust(t, err)
	return v
}

// rows are the rows of the leaves [first, end).
func (l *vfLog) rows(first, end int64) []dataset.Row {
	out := make([]dataset.Row, 0, end-first)
	for i := first; i < end; i++ {
		out = append(out, dataset.RowOf(i, l.atts[i]))
	}
	return out
}

// vfDay is a day's file and its manifest.
type vfDay struct {
	meta dataset.FileMeta
	file []byte
	m    dataset.Manifest
}

// day writes the file of the leaves [first, end) with NewFileWriter and
// its manifest against the checkpoint of size leaves cosigned by 2.
func (l *vfLog) day(t testing.TB, first, end, size int64) vfDay {
	t.Helper()
	d, err := dataset.ParseDay("2026-11-27")
	vfMust(t, err)
	meta := dataset.FileMeta{Day: d, Origin: vfOrigin, First: first, End: end}
	var buf bytes.Buffer
	fw := dataset.NewFileWriter(&buf, meta)
	vfMust(t, fw.Write(l.rows(first, end)))
	w, err := fw.Close()
	vfMust(t, err)
	proof, err := logformat.ProveRange(size, first, end, l.reader())
	vfMust(t, err)
	m := dataset.Manifest{Format: dataset.Format, Day: d.String(), File: dataset.FileName(d), Rows: w.Rows, FirstIndex: first,
		LastIndex: end - 1, Bytes: w.Bytes, SHA256: hex.EncodeToString(w.SHA256[:]), Schema: dataset.Schema(),
		Checkpoint: l.checkpoint(t, size, 2), Witnessed: dataset.Witnessed{By: 2, Of: 2, Quorum: 2},
		Proof: dataset.ProofOf(size, proof), CutAt: attestation.At(d.Next())}
	// The bytes are what the producer's own check took: the rows rebuild
	// the root.
	hashes := make([]tlog.Hash, 0, end-first)
	for _, r := range l.rows(first, end) {
		leaf, err := r.Leaf()
		vfMust(t, err)
		hashes = append(hashes, tlog.RecordHash(leaf))
	}
	root, err := tlog.TreeHash(size, l.reader())
	vfMust(t, err)
	vfMust(t, logformat.VerifyRange(size, first, hashes, proof, root))
	return vfDay{meta: meta, file: buf.Bytes(), m: m}
}

// vfWriteRaw writes rows as a day's file of meta without the writer's
// checks (a file someone altered).
func vfWriteRaw(t testing.TB, meta dataset.FileMeta, rows []dataset.Row) []byte {
	t.Helper()
	return vfWriteRawGroups(t, meta, rows, dataset.RowGroupRows)
}

// vfWriteRawGroups is vfWriteRaw with groupRows rows per row group.
func vfWriteRawGroups(t testing.TB, meta dataset.FileMeta, rows []dataset.Row, groupRows int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[dataset.Row](&buf, parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault}),
		parquet.MaxRowsPerRowGroup(groupRows), parquet.CreatedBy("attestd", "dataset", "v1"),
		parquet.KeyValueMetadata("attestd.format", dataset.Format),
		parquet.KeyValueMetadata("attestd.day", meta.Day.String()),
		parquet.KeyValueMetadata("attestd.origin", meta.Origin),
		parquet.KeyValueMetadata("attestd.first_index", strconv.FormatInt(meta.First, 10)),
		parquet.KeyValueMetadata("attestd.end_index", strconv.FormatInt(meta.End, 10)))
	_, err := pw.Write(rows)
	vfMust(t, err)
	vfMust(t, pw.Close())
	return buf.Bytes()
}

// vfTiles reads leaf hashes from the log in memory, as a node's tiles
// hold them.
type vfTiles struct {
	l     *vfLog
	calls int
}

func (m *vfTiles) LeafHashes(_ context.Context, first, end, treeSize int64) ([]tlog.Hash, error) {
	m.calls++
	if first < 0 || end <= first || end > treeSize {
		return nil, fmt.Errorf("leaves [%d, %d) of %d", first, end, treeSize)
	}
	out := make([]tlog.Hash, 0, end-first)
	for i := first; i < end; i++ {
		out = append(out, m.l.hashes[tlog.StoredHashIndex(0, i)])
	}
	return out, nil
}

// verify runs VerifyFile on file against m.
func verify(t testing.TB, v *client.LogVerifier, file []byte, m dataset.Manifest, tiles dataset.TileReader) (dataset.Report, error) {
	t.Helper()
	sum := sha256.Sum256(file)
	return dataset.VerifyFile(context.Background(), bytes.NewReader(file), int64(len(file)),
		dataset.VerifyOptions{Verifier: v, Manifest: m, FileSHA256: hex.EncodeToString(sum[:]), Tiles: tiles})
}

// TestVerifyFileGood: a day's file as the producer writes it verifies,
// online and offline, and the report says what it holds.
func TestVerifyFileGood(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	tiles := &vfTiles{l: l}
	for _, tr := range []dataset.TileReader{nil, tiles} {
		rep, err := verify(t, l.verifier(t, 2, 3), d.file, d.m, tr)
		if err != nil {
			t.Fatalf("a good file: %v", err)
		}
		want := dataset.Report{Rows: 250, Day: "2026-11-27", FirstIndex: 200, LastIndex: 449, CheckpointSize: 600, Witnessed: 2, BadRow: -1, BadLeaf: -1}
		if rep != want {
			t.Fatalf("report %+v, want %+v", rep, want)
		}
	}
	if tiles.calls != 0 {
		t.Fatalf("a good file read the log's tiles %d times", tiles.calls)
	}
	// Without the caller's digest, VerifyFile computes it.
	if _, err := dataset.VerifyFile(context.Background(), bytes.NewReader(d.file), int64(len(d.file)),
		dataset.VerifyOptions{Verifier: l.verifier(t, 0, 0), Manifest: d.m}); err != nil {
		t.Fatalf("a good file, its digest computed: %v", err)
	}
	if meta, err := dataset.ReadMeta(bytes.NewReader(d.file), int64(len(d.file))); err != nil || meta != d.meta {
		t.Fatalf("ReadMeta: %+v, %v; want %+v", meta, err, d.meta)
	}
	// A file of many row groups (its digest in the manifest) reads in
	// order across them, and names a row out of place in a later one.
	m := d.m
	small := vfWriteRawGroups(t, d.meta, l.rows(200, 450), 37)
	if pf, err := parquet.OpenFile(bytes.NewReader(small), int64(len(small))); err != nil || len(pf.RowGroups()) != 7 {
		t.Fatalf("the file of 37 rows per row group: %v", err)
	}
	sum := sha256.Sum256(small)
	m.SHA256, m.Bytes = hex.EncodeToString(sum[:]), int64(len(small))
	if rep, err := verify(t, l.verifier(t, 2, 2), small, m, nil); err != nil || rep.Rows != 250 {
		t.Fatalf("a file of 7 row groups: %+v, %v", rep, err)
	}
	rows := l.rows(200, 450)
	rows[73], rows[74] = rows[74], rows[73] // across the second and third row groups
	if rep, err := verify(t, l.verifier(t, 2, 2), vfWriteRawGroups(t, d.meta, rows, 37), m, nil); !errors.Is(err, dataset.ErrRowOrder) || rep.BadRow != 74 {
		t.Fatalf("rows swapped across row groups: %+v, %v", rep, err)
	}
}

// TestVerifyFileChangedValue: one character changed in one row's leaf
// field is named (row and leaf) with the log's tiles, and fails offline
// without a name; with the manifest's digest made to match, the rows
// still fail.
func TestVerifyFileChangedValue(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	flip := func(s string) string {
		c := byte('2')
		if s[5] == c {
			c = '3'
		}
		return s[:5] + string(c) + s[6:]
	}
	for name, change := range map[string]func(*dataset.Row){
		"pda":        func(r *dataset.Row) { r.PDA = flip(r.PDA) },
		"actionHash": func(r *dataset.Row) { r.ActionHash = flip(r.ActionHash) },
		"slot":       func(r *dataset.Row) { r.Slot++ },
	} {
		rows := l.rows(200, 450)
		change(&rows[17])
		file := vfWriteRaw(t, d.meta, rows)
		rep, err := verify(t, l.verifier(t, 2, 2), file, d.m, &vfTiles{l: l})
		if !errors.Is(err, dataset.ErrLeaf) || !errors.Is(err, dataset.ErrDigest) || rep.BadRow != 18 || rep.BadLeaf != 217 ||
			!strings.Contains(err.Error(), "row 18 (leaf 217): its fields do not give the log's leaf: pda=") {
			t.Fatalf("%s changed, online: %+v, %v", name, rep, err)
		}
		rep, err = verify(t, l.verifier(t, 2, 2), file, d.m, nil)
		if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != -1 || !strings.Contains(err.Error(), "--url") || strings.Contains(err.Error(), "row 18") {
			t.Fatalf("%s changed, offline: %+v, %v", name, rep, err)
		}
		// The manifest is not signed: its digest made the file's proves nothing.
		m := d.m
		sum := sha256.Sum256(file)
		m.SHA256, m.Bytes = hex.EncodeToString(sum[:]), int64(len(file))
		rep, err = verify(t, l.verifier(t, 2, 2), file, m, &vfTiles{l: l})
		if !errors.Is(err, dataset.ErrLeaf) || errors.Is(err, dataset.ErrDigest) || rep.BadRow != 18 {
			t.Fatalf("%s changed, the manifest's digest too: %+v, %v", name, rep, err)
		}
	}
	// A row whose fields give no leaf at all is named offline.
	rows := l.rows(200, 450)
	rows[3].ActionType = "teleport"
	rep, err := verify(t, l.verifier(t, 2, 2), vfWriteRaw(t, d.meta, rows), d.m, nil)
	if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != 4 || !strings.Contains(err.Error(), "row 4 (leaf 203): its fields give no leaf") {
		t.Fatalf("an unknown action type: %+v, %v", rep, err)
	}
}

// TestVerifyFileRowsOutOfPlace: a dropped, a repeated, two swapped rows,
// a row too many and one too few are each named.
func TestVerifyFileRowsOutOfPlace(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	rows := func() []dataset.Row { return l.rows(200, 450) }
	cases := []struct {
		name    string
		rows    []dataset.Row
		badRow  int64
		message string
	}{
		{"dropped", slices.Delete(rows(), 30, 31), 31, "row 31 holds leaf 231 where leaf 230 belongs (leaf 230 is missing"},
		{"repeated", slices.Insert(rows(), 30, rows()[30]), 32, "row 32 holds leaf 230 where leaf 231 belongs (a row repeated"},
		{"swapped", func() []dataset.Row { r := rows(); r[40], r[41] = r[41], r[40]; return r }(), 41, "row 41 holds leaf 241 where leaf 240 belongs"},
		{"one too many", append(rows(), l.rows(450, 451)...), 251, "row 251 holds leaf 450 beyond the day's last leaf 449"},
		{"the last missing", rows()[:249], 250, "the file ends after 249 rows: leaves 449 to 449 are missing"},
	}
	for _, c := range cases {
		rep, err := verify(t, l.verifier(t, 2, 2), vfWriteRaw(t, d.meta, c.rows), d.m, &vfTiles{l: l})
		if !errors.Is(err, dataset.ErrRowOrder) || !errors.Is(err, dataset.ErrDigest) || rep.BadRow != c.badRow || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%s: %+v, %v; want row %d and %q", c.name, rep, err, c.badRow, c.message)
		}
	}
	// The file's metadata must be the manifest's and the checkpoint's.
	for name, meta := range map[string]dataset.FileMeta{
		"another log":  {Day: d.meta.Day, Origin: "attestd.other/log", First: 200, End: 450},
		"another day":  {Day: dataset.DayOf(d.meta.Day.Next()), Origin: vfOrigin, First: 200, End: 450},
		"other leaves": {Day: d.meta.Day, Origin: vfOrigin, First: 200, End: 451},
	} {
		if _, err := verify(t, l.verifier(t, 2, 2), vfWriteRaw(t, meta, rows()), d.m, nil); !errors.Is(err, dataset.ErrManifest) {
			t.Errorf("a file of %s: %v", name, err)
		}
	}
}

// TestVerifyFileBytesFlipped: any byte of the file flipped fails (the
// digest, and whatever the reader makes of it), never panics.
func TestVerifyFileBytesFlipped(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	v := l.verifier(t, 2, 2)
	step := max(1, len(d.file)/400)
	for i := 0; i < len(d.file); i += step {
		for _, at := range []int{i, len(d.file) - 1 - i%64} {
			file := bytes.Clone(d.file)
			file[at] ^= 0x5a
			if _, err := verify(t, v, file, d.m, &vfTiles{l: l}); !errors.Is(err, dataset.ErrDigest) {
				t.Fatalf("byte %d of %d flipped: %v", at, len(file), err)
			}
		}
	}
	for name, file := range map[string][]byte{"empty": nil, "cut short": d.file[:len(d.file)/2], "its head only": d.file[:4],
		"no footer": d.file[:len(d.file)-8]} {
		if _, err := verify(t, v, file, d.m, nil); !errors.Is(err, dataset.ErrUnreadable) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestVerifyFilePageTooLarge: a page header that claims a page larger
// than its chunk is refused before the Parquet package allocates it.
func TestVerifyFilePageTooLarge(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	pf, err := parquet.OpenFile(bytes.NewReader(d.file), int64(len(d.file)))
	vfMust(t, err)
	md := pf.Metadata().RowGroups[0].Columns[1].MetaData // pda: no dictionary
	file := bytes.Clone(d.file)
	p := md.DataPageOffset
	for field := 1; field <= 3; field++ { // type, uncompressed_page_size, compressed_page_size: i32s
		if file[p] != 0x15 {
			t.Fatalf("the page header at %d: field %d is not the i32 expected (%#x)", md.DataPageOffset, field, file[p])
		}
		p++
		for ; file[p]&0x80 != 0; p++ {
			if field == 3 {
				file[p] = 0xff
			}
		}
		if field == 3 {
			file[p] = 0x7f // the same length, the largest value
		}
		p++
	}
	m := d.m
	sum := sha256.Sum256(file)
	m.SHA256 = hex.EncodeToString(sum[:])
	rep, err := verify(t, l.verifier(t, 2, 2), file, m, nil)
	if !errors.Is(err, dataset.ErrUnreadable) || !strings.Contains(err.Error(), "row group 1 of 1 (from row 1): column pda: the page header at byte") {
		t.Fatalf("a page larger than its chunk: %+v, %v", rep, err)
	}
}

// TestVerifyFileCheckpoint: a manifest whose checkpoint is forged, of
// another tree, or short of the witness quorum fails, as does a range
// proof not the log's.
func TestVerifyFileCheckpoint(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 200, 450, 600)
	other := newVFLog(t, 800)
	otherVerifier, err := client.NewLogVerifier(other.vkey) // same name, another key
	vfMust(t, err)
	root, err := tlog.TreeHash(600, l.reader())
	vfMust(t, err)
	rootLine := base64Line(root)
	forgedRoot := strings.Replace(d.m.Checkpoint, rootLine, base64Line(tlog.RecordHash([]byte("x"))), 1)
	cases := []struct {
		name string
		v    *client.LogVerifier
		edit func(m *dataset.Manifest)
		want []error
	}{
		{"signed by another key", otherVerifier, nil, []error{dataset.ErrManifest, client.ErrCheckpointSignature}},
		{"root changed", l.verifier(t, 2, 2), func(m *dataset.Manifest) { m.Checkpoint = forgedRoot }, []error{dataset.ErrManifest, client.ErrCheckpointSignature}},
		{"quorum of 3, 2 cosigned", l.verifier(t, 3, 3), nil, []error{dataset.ErrManifest, client.ErrCheckpointWitnesses}},
		{"quorum of 1, none cosigned", l.verifier(t, 1, 1), func(m *dataset.Manifest) { m.Checkpoint = l.checkpoint(t, 600, 0) }, []error{dataset.ErrManifest, client.ErrCheckpointWitnesses}},
		{"a checkpoint of another tree", l.verifier(t, 2, 2), func(m *dataset.Manifest) { m.Checkpoint = l.checkpoint(t, 700, 2) }, []error{dataset.ErrManifest}},
		{"the proof's tree changed too", l.verifier(t, 2, 2), func(m *dataset.Manifest) { m.Checkpoint = l.checkpoint(t, 700, 2); m.Proof.TreeSize = 700 }, []error{dataset.ErrManifest}},
		{"rows miscounted", l.verifier(t, 2, 2), func(m *dataset.Manifest) { m.Rows-- }, []error{dataset.ErrManifest}},
		{"another format", l.verifier(t, 2, 2), func(m *dataset.Manifest) { m.Format = "attestd-dataset/v0" }, []error{dataset.ErrManifest}},
		{"a proof hash changed", l.verifier(t, 2, 2), func(m *dataset.Manifest) {
			m.Proof.Left = slices.Clone(m.Proof.Left)
			m.Proof.Left[0] = bytes.Repeat([]byte{7}, 32)
		}, []error{dataset.ErrLeaf}},
	}
	for _, c := range cases {
		m := d.m
		if c.edit != nil {
			c.edit(&m)
		}
		rep, err := verify(t, c.v, d.file, m, &vfTiles{l: l})
		for _, want := range c.want {
			if !errors.Is(err, want) || rep.BadRow != -1 {
				t.Errorf("%s: %+v, %v; want %v", c.name, rep, err, want)
			}
		}
	}
	// The witnesses the verifier trusts are those counted.
	if rep, err := verify(t, l.verifier(t, 1, 1), d.file, d.m, nil); err != nil || rep.Witnessed != 1 {
		t.Fatalf("quorum 1 of the first witness: %+v, %v", rep, err)
	}
}

func base64Line(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) + "\n" }

// vfLyingTiles answers the log's leaf hashes with one changed, or an
// error, or too few.
type vfLyingTiles struct {
	vfTiles
	change int64 // the leaf whose hash changes (-1: none)
	err    error
	short  bool
}

func (m *vfLyingTiles) LeafHashes(ctx context.Context, first, end, treeSize int64) ([]tlog.Hash, error) {
	if m.err != nil {
		return nil, m.err
	}
	out, err := m.vfTiles.LeafHashes(ctx, first, end, treeSize)
	if m.change >= first && m.change < end {
		out[m.change-first][0] ^= 1
	}
	if m.short {
		out = out[1:]
	}
	return out, err
}

// TestVerifyFileTiles: a row changed in a day at the tree's edge (a
// partial tile) is named from the log's leaf hashes; leaf hashes that are
// not the log's (they do not rebuild the checkpoint's root) blame no row,
// nor do leaf hashes that cannot be read.
func TestVerifyFileTiles(t *testing.T) {
	l := newVFLog(t, 800)
	d := l.day(t, 450, 600, 600)
	rows := l.rows(450, 600)
	rows[100].TxSignature = "1" + rows[100].TxSignature[1:]
	file := vfWriteRaw(t, d.meta, rows)
	v := l.verifier(t, 2, 2)
	rep, err := verify(t, v, file, d.m, &vfTiles{l: l})
	if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != 101 || rep.BadLeaf != 550 || !strings.Contains(err.Error(), "row 101 (leaf 550)") {
		t.Fatalf("a row at the tree's edge: %+v, %v", rep, err)
	}
	for _, leaf := range []int64{500, 550} { // another row blamed; the changed row cleared
		rep, err = verify(t, v, file, d.m, &vfLyingTiles{vfTiles: vfTiles{l: l}, change: leaf})
		if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != -1 || !strings.Contains(err.Error(), "neither do the log's leaves") {
			t.Fatalf("leaf hashes with leaf %d changed: %+v, %v", leaf, rep, err)
		}
	}
	for name, tiles := range map[string]*vfLyingTiles{
		"an error": {vfTiles: vfTiles{l: l}, change: -1, err: errors.New("the node is down")},
		"too few":  {vfTiles: vfTiles{l: l}, change: -1, short: true},
	} {
		rep, err := verify(t, v, file, d.m, tiles)
		if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != -1 || !strings.Contains(err.Error(), "reading the log's leaves") {
			t.Errorf("leaf hashes answering %s: %+v, %v", name, rep, err)
		}
	}
	// A day of more rows than one window of comparison names a row past it.
	big := newVFLog(t, 9000)
	bd := big.day(t, 100, 8900, 9000)
	rows = big.rows(100, 8900)
	rows[7000].Slot++
	rep, err = verify(t, big.verifier(t, 2, 2), vfWriteRaw(t, bd.meta, rows), bd.m, &vfTiles{l: big})
	if !errors.Is(err, dataset.ErrLeaf) || rep.BadRow != 7001 || rep.BadLeaf != 7100 {
		t.Fatalf("a row past the first window: %+v, %v", rep, err)
	}
}

// FuzzVerifyFile: whatever the bytes, VerifyFile returns (never panics),
// and accepts only the file the manifest describes.
func FuzzVerifyFile(f *testing.F) {
	l := newVFLog(f, 16) // a small file: the fuzzer's mutations reach its pages
	d := l.day(f, 5, 13, 16)
	v := l.verifier(f, 1, 1)
	f.Add(d.file)
	f.Add([]byte{})
	f.Add([]byte("PAR1"))
	f.Add(d.file[:len(d.file)/2])
	f.Add(vfWriteRaw(f, d.meta, slices.Delete(l.rows(5, 13), 3, 4)))
	f.Add(vfWriteRawGroups(f, d.meta, l.rows(5, 13), 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = dataset.VerifyFile(context.Background(), bytes.NewReader(b), int64(len(b)),
				dataset.VerifyOptions{Verifier: v, Manifest: d.m, Tiles: &vfTiles{l: l}})
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("VerifyFile of %d bytes still runs after 5 s", len(b))
		}
		if err == nil && !bytes.Equal(b, d.file) {
			t.Fatalf("accepted %d bytes that are not the file", len(b))
		}
	})
}
