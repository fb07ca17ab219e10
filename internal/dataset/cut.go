package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/translog/logformat"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/mod/sumdb/tlog"
)

// readBatch is how many leaves one query reads while a file is written.
const readBatch = 8192

// dayRange is the next day to cut, or why there is none yet.
type dayRange struct {
	day        Day
	first, end int64 // the leaves [first, end)
	cp         store.LogCheckpoint
	witnessed  int
	pending    *Pending
}

// nextDay finds the day that starts at leaf first: its end (the first
// leaf stamped on a later day) and a witnessed checkpoint that covers it.
func (p *Producer) nextDay(ctx context.Context, first int64) (dayRange, error) {
	ts, err := p.d.Store.DatasetDayStart(ctx, first)
	if errors.Is(err, store.ErrNotFound) {
		return dayRange{pending: &Pending{Code: PendingDayOpen,
			Reason: fmt.Sprintf("the log holds no leaf after the last file yet (leaf %d comes next)", first)}}, nil
	}
	if err != nil {
		return dayRange{}, err
	}
	r := dayRange{day: DayOf(ts), first: first}
	end, ok, err := p.d.Store.DatasetDayEnd(ctx, first, r.day.Next())
	if err != nil {
		return dayRange{}, err
	}
	if !ok {
		r.pending = &Pending{Day: r.day.String(), Code: PendingDayOpen,
			Reason: "the day is open: its last leaf is known once the log holds an attestation stamped on a later day"}
		return r, nil
	}
	r.end = end
	cfg := p.d.Log
	cp, witnessed, ok, err := translog.WitnessedCheckpoint(ctx, p.d.Store, cfg)
	if err != nil {
		return dayRange{}, err
	}
	if !ok || cp.Size < end {
		have := "none"
		if ok {
			have = fmt.Sprint(cp.Size, " leaves")
		}
		r.pending = &Pending{Day: r.day.String(), Code: PendingCheckpoint,
			Reason: fmt.Sprintf("waiting for a checkpoint of at least %d leaves cosigned by %d of the %d witnesses (the newest so cosigned: %s)",
				end, cfg.Quorum, len(cfg.Witnesses), have)}
		return r, nil
	}
	r.cp, r.witnessed = cp, witnessed
	return r, nil
}

// cut writes day r's file, then its manifest. A manifest already in the
// bucket (a crash after it, before the index) is the day's and is kept.
// The file is committed only after its rows rebuilt the checkpoint's
// root; a failure or a crash before that leaves no object (an S3
// multipart upload never completed, a temporary file never renamed).
func (p *Producer) cut(ctx context.Context, r dayRange) (Manifest, bool, error) {
	if m, ok, err := p.readManifest(ctx, r); ok || err != nil {
		return m, false, err
	}
	proof, err := logformat.ProveRange(r.cp.Size, r.first, r.end, p.d.Store.LogHashReader(ctx))
	if err != nil {
		return Manifest{}, false, fmt.Errorf("day %s: %w", r.day, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // before Close: the write is aborted
	w, err := p.d.Bucket.NewWriter(wctx, FileName(r.day), &blob.WriterOptions{ContentType: "application/vnd.apache.parquet",
		CacheControl: "public, max-age=31536000, immutable"})
	if err != nil {
		return Manifest{}, false, fmt.Errorf("day %s: open the file: %w", r.day, err)
	}
	written, err := p.writeRows(ctx, w, r, proof)
	if err != nil {
		cancel()
		_ = w.Close()
		return Manifest{}, false, err
	}
	if err := w.Close(); err != nil {
		return Manifest{}, false, fmt.Errorf("day %s: commit the file: %w", r.day, err)
	}
	m := Manifest{Format: Format, Day: r.day.String(), File: FileName(r.day), Rows: written.Rows, FirstIndex: r.first,
		LastIndex: r.end - 1, Bytes: written.Bytes, SHA256: hexOf(written.SHA256[:]), Schema: Schema(), Checkpoint: r.cp.Note,
		Witnessed: Witnessed{By: r.witnessed, Of: len(p.d.Log.Witnesses), Quorum: p.d.Log.Quorum},
		Proof:     ProofOf(r.cp.Size, proof), CutAt: attestation.At(p.d.Now())}
	if err := p.writeJSON(ctx, ManifestName(r.day), m, "public, max-age=31536000, immutable"); err != nil {
		return Manifest{}, false, err
	}
	p.m.files.Inc()
	p.m.rows.Add(float64(written.Rows))
	return m, true, nil
}

// readManifest reads day r's manifest when one was written.
func (p *Producer) readManifest(ctx context.Context, r dayRange) (Manifest, bool, error) {
	b, err := p.d.Bucket.ReadAll(ctx, ManifestName(r.day))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Manifest{}, false, nil
	}
	if err != nil {
		return Manifest{}, false, fmt.Errorf("day %s: read its manifest: %w", r.day, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, false, fmt.Errorf("day %s: read its manifest: %w", r.day, err)
	}
	if m.FirstIndex != r.first || m.LastIndex != r.end-1 {
		return Manifest{}, false, fmt.Errorf("day %s: its manifest holds leaves [%d, %d], the log says [%d, %d]: the bucket is not this log's",
			r.day, m.FirstIndex, m.LastIndex, r.first, r.end-1)
	}
	return m, true, nil
}

// writeRows writes the day's rows to w, each checked against the log's
// leaf, and checks that they rebuild the checkpoint's root.
func (p *Producer) writeRows(ctx context.Context, w *blob.Writer, r dayRange, proof logformat.RangeProof) (Written, error) {
	hasher, err := logformat.NewRangeHasher(r.cp.Size, r.first, r.end, proof)
	if err != nil {
		return Written{}, fmt.Errorf("day %s: %w", r.day, err)
	}
	fw := NewFileWriter(w, FileMeta{Day: r.day, Origin: p.d.Log.Origin(), First: r.first, End: r.end})
	p.log.Info("dataset day started", "day", r.day.String(), "rows", r.end-r.first, "first", r.first)
	out := make([]Row, 0, readBatch)
	report := time.Now()
	for pos := r.first; pos < r.end; {
		n := int(min(readBatch, r.end-pos))
		rows, err := p.d.Store.DatasetRows(ctx, pos, n)
		if err != nil {
			return Written{}, err
		}
		if len(rows) != n {
			return Written{}, fmt.Errorf("day %s: %d leaves from %d, want %d", r.day, len(rows), pos, n)
		}
		out = out[:0]
		for _, dr := range rows {
			row := RowOf(dr.Index, dr.Attestation)
			leaf, err := row.Leaf()
			if err != nil || !bytes.Equal(leaf, dr.Leaf) {
				return Written{}, fmt.Errorf("day %s: leaf %d: the attestation's row does not give the log's leaf (%v)", r.day, dr.Index, err)
			}
			if err := hasher.Add(tlog.RecordHash(leaf)); err != nil {
				return Written{}, err
			}
			out = append(out, row)
		}
		if err := fw.Write(out); err != nil {
			return Written{}, err
		}
		pos += int64(n)
		if time.Since(report) > 10*time.Second {
			report = time.Now()
			p.log.Info("dataset day writing", "day", r.day.String(), "rows", pos-r.first, "of", r.end-r.first)
		}
	}
	written, err := fw.Close()
	if err != nil {
		return Written{}, err
	}
	root, err := hasher.Root()
	if err != nil {
		return Written{}, err
	}
	if root != r.cp.Root {
		return Written{}, fmt.Errorf("day %s: the rows do not rebuild the root of the checkpoint of %d leaves", r.day, r.cp.Size)
	}
	return written, nil
}
