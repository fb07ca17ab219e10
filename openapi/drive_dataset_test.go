package openapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob/fileblob"
)

// driveDataset provokes every documented answer of the dataset's routes
// from 200 to 429, on a node serving a bucket (a directory, through the
// same blob library as S3) that holds one day's file, its manifest and an
// index; its guard allows a burst of 10 requests, then 429.
func driveDataset(t *testing.T, env *apptest.Env) {
	t.Helper()
	ctx := context.Background()
	b, err := fileblob.OpenBucket(t.TempDir(), nil)
	testenv.Must(t, err, "bucket")
	t.Cleanup(func() { b.Close() })
	day, err := dataset.ParseDay("2026-11-27")
	testenv.Must(t, err, "day")
	var file bytes.Buffer
	fw := dataset.NewFileWriter(&file, dataset.FileMeta{Day: day, Origin: "attestd.test/log", First: 0, End: 2})
	rows := []dataset.Row{datasetRow(0, day), datasetRow(1, day)}
	testenv.Must(t, fw.Write(rows), "rows")
	w, err := fw.Close()
	testenv.Must(t, err, "close")
	sum := sha256.Sum256(file.Bytes())
	m := dataset.Manifest{Format: dataset.Format, Day: day.String(), File: dataset.FileName(day), Rows: w.Rows, FirstIndex: 0, LastIndex: 1,
		Bytes: w.Bytes, SHA256: hex.EncodeToString(sum[:]), Schema: dataset.Schema(), Checkpoint: "attestd.test/log\n2\nAAAA\n\n— attestd.test/log AAAA\n",
		Witnessed: dataset.Witnessed{By: 1, Of: 1, Quorum: 1}, Proof: dataset.Proof{TreeSize: 2}, CutAt: attestation.At(time.Now())}
	idx := dataset.Index{Format: dataset.Format, Origin: "attestd.test/log", UpdatedAt: attestation.At(time.Now()), NextIndex: 2,
		Days: []dataset.IndexDay{{Day: m.Day, File: m.File, Manifest: dataset.ManifestName(day), Rows: m.Rows, LastIndex: 1, Bytes: m.Bytes,
			SHA256: m.SHA256, CheckpointSize: 2, Witnessed: m.Witnessed}},
		Pending: []dataset.Pending{{Day: "2026-11-28", Code: dataset.PendingDayOpen, Reason: "the day is open"}}}
	testenv.Must(t, b.WriteAll(ctx, dataset.FileName(day), file.Bytes(), nil), "write the file")
	for key, v := range map[string]any{dataset.ManifestName(day): m, dataset.IndexName: idx} {
		j, err := json.Marshal(v)
		testenv.Must(t, err, "encode")
		testenv.Must(t, b.WriteAll(ctx, key, j, nil), "write %s", key)
	}
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: b, Config: dataset.Config{Rate: 1}, Logger: apptest.Logger()})
	node := rootOf(env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Unlimited = append(d.Unlimited, srv.Routes()...) }}))
	send := func(path string, hdr map[string]string, want int) *apptest.Response {
		t.Helper()
		r := node.Do(t, http.MethodGet, path, nil, hdr)
		if r.Status != want {
			t.Errorf("GET %s %v: %d, want %d: %.300s", path, hdr, r.Status, want, r.Body)
		}
		return r
	}
	for _, p := range []string{"/dataset/index.json", "/dataset/2026-11-27.json", "/dataset/2026-11-27.parquet"} {
		r := send(p, nil, http.StatusOK)
		send(p, map[string]string{"If-None-Match": r.Header.Get("ETag")}, http.StatusNotModified)
	}
	send("/dataset/2026-11-27.parquet", map[string]string{"Range": "bytes=0-3"}, http.StatusPartialContent)
	send("/dataset/2026-11-27.parquet", map[string]string{"Range": "bytes=0-1,4-5"}, http.StatusRequestedRangeNotSatisfiable)
	send("/dataset/2026-11-26.parquet", nil, http.StatusNotFound)
	send("/dataset/2026-11-26.json", nil, http.StatusNotFound)
	// The guard: a burst of 10 requests a second for one address, then 429.
	limited := map[string]bool{}
	for i := 0; i < 30 && len(limited) < 3; i++ {
		for _, p := range []string{"/dataset/index.json", "/dataset/2026-11-27.parquet", "/dataset/2026-11-27.json"} {
			if r := node.Do(t, http.MethodGet, p, nil, map[string]string{"Range": "bytes=0-0"}); r.Status == http.StatusTooManyRequests {
				limited[p] = true
			}
		}
	}
	if len(limited) != 3 {
		t.Errorf("the dataset's guard did not answer 429 on each route: %v", limited)
	}
}

func datasetRow(i int64, day dataset.Day) dataset.Row {
	return dataset.Row{LogIndex: i, PDA: "11111111111111111111111111111112", AgentPDA: "11111111111111111111111111111113",
		ActionType: "Decision", ActionHash: "00" + hex.EncodeToString(make([]byte, 31)), TxSignature: "1111111111111111111111111111111111111111111111111111111111111111",
		Slot: 100 + i, Timestamp: day.Add(time.Hour), AgentID: "11111111111111111111111111111114", AgentSignature: "1111111111111111111111111111111111111111111111111111111111111111"}
}
