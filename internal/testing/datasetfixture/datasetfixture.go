// Package datasetfixture writes a daily dataset (package dataset) into a
// bucket for tests of its readers: a directory, through the same blob
// library as S3 in production, holding for each day a Parquet file of two
// rows and its manifest, and their index, laid out as attestd dataset
// writes them. The files are real; the manifests' checkpoint is not
// signed (readers of the index and files, not verifiers, use it).
package datasetfixture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
)

// Write makes the bucket (closed when the test ends) with a file of two
// rows per day of days (YYYY-MM-DD, oldest first), their manifests, and an
// index listing them with pending as its one pending entry. With no days
// the bucket is empty: the producer has not run.
func Write(t testing.TB, pending dataset.Pending, days ...string) (*blob.Bucket, dataset.Index) {
	t.Helper()
	ctx := context.Background()
	b, err := fileblob.OpenBucket(t.TempDir(), nil)
	testenv.Must(t, err, "bucket")
	t.Cleanup(func() { b.Close() })
	idx := dataset.Index{Format: dataset.Format, Origin: "attestd.test/log", UpdatedAt: attestation.At(time.Now()), Days: []dataset.IndexDay{},
		Pending: []dataset.Pending{pending}}
	if len(days) == 0 {
		return b, idx
	}
	for _, s := range days {
		day, err := dataset.ParseDay(s)
		testenv.Must(t, err, "day")
		first := idx.NextIndex
		var file bytes.Buffer
		fw := dataset.NewFileWriter(&file, dataset.FileMeta{Day: day, Origin: idx.Origin, First: first, End: first + 2})
		testenv.Must(t, fw.Write([]dataset.Row{Row(first, day), Row(first+1, day)}), "rows")
		w, err := fw.Close()
		testenv.Must(t, err, "close")
		sum := sha256.Sum256(file.Bytes())
		m := dataset.Manifest{Format: dataset.Format, Day: s, File: dataset.FileName(day), Rows: w.Rows, FirstIndex: first, LastIndex: first + 1,
			Bytes: w.Bytes, SHA256: hex.EncodeToString(sum[:]), Schema: dataset.Schema(), Checkpoint: "attestd.test/log\n2\nAAAA\n\n— attestd.test/log AAAA\n",
			Witnessed: dataset.Witnessed{By: 2, Of: 3, Quorum: 2}, Proof: dataset.Proof{TreeSize: first + 2}, CutAt: attestation.At(time.Now())}
		testenv.Must(t, b.WriteAll(ctx, m.File, file.Bytes(), nil), "write the file")
		writeJSON(t, b, dataset.ManifestName(day), m)
		idx.Days = append(idx.Days, dataset.IndexDay{Day: s, File: m.File, Manifest: dataset.ManifestName(day), Rows: m.Rows,
			FirstIndex: first, LastIndex: first + 1, Bytes: m.Bytes, SHA256: m.SHA256, CheckpointSize: first + 2, Witnessed: m.Witnessed})
		idx.NextIndex = first + 2
	}
	writeJSON(t, b, dataset.IndexName, idx)
	return b, idx
}

func writeJSON(t testing.TB, b *blob.Bucket, key string, v any) {
	t.Helper()
	j, err := json.Marshal(v)
	testenv.Must(t, err, "encode %s", key)
	testenv.Must(t, b.WriteAll(context.Background(), key, j, nil), "write %s", key)
}

// Row is a valid row of leaf i stamped on day.
func Row(i int64, day dataset.Day) dataset.Row {
	return dataset.Row{LogIndex: i, PDA: "11111111111111111111111111111112", AgentPDA: "11111111111111111111111111111113",
		ActionType: "Decision", ActionHash: hex.EncodeToString(make([]byte, 32)), TxSignature: "1111111111111111111111111111111111111111111111111111111111111111",
		Slot: 100 + i, Timestamp: day.Add(time.Hour), AgentID: "11111111111111111111111111111114", AgentSignature: "1111111111111111111111111111111111111111111111111111111111111111"}
}
