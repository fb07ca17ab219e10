package dataset_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob"
)

// The whole path: a producer writes the fixture's days into SeaweedFS, a
// node serves them, and a Parquet reader that is not the writer's library
// (Apache Arrow's) reads each back: every column of every row equals the
// API's answer for that attestation, the row count is the number of
// leaves the log holds for the day, and the file verifies against its
// manifest's witnessed checkpoint.
func TestDaysWrittenServedAndReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts SeaweedFS")
	}
	w := newWorld(t)
	w.fill(t, 60)
	prefix := prefixFor(t)
	cut, err := w.producer(t, prefix).Round(context.Background())
	testenv.Must(t, err, "round")
	if cut != len(fixtureDays) {
		t.Fatalf("the round cut %d days, want %d", cut, len(fixtureDays))
	}
	node := w.startNode(t, prefix)

	var idx dataset.Index
	res := node.GetRoot(t, "/dataset/index.json")
	if res.Status != http.StatusOK {
		t.Fatalf("index: %d %s", res.Status, res.Body)
	}
	testenv.Must(t, json.Unmarshal(res.Body, &idx), "decode the index")
	if len(idx.Days) != len(fixtureDays) || len(idx.Pending) != 1 || idx.Pending[0].Day != "2026-11-24" || idx.Pending[0].Code != dataset.PendingDayOpen {
		t.Fatalf("index: days %+v pending %+v", idx.Days, idx.Pending)
	}
	verifier := w.verifier(t)
	for i, d := range idx.Days {
		if d.Day != fixtureDays[i] {
			t.Fatalf("day %d is %s, want %s", i, d.Day, fixtureDays[i])
		}
		body := node.GetRoot(t, "/dataset/"+d.File)
		if body.Status != http.StatusOK || body.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Fatalf("%s: %d, Cache-Control %q", d.File, body.Status, body.Header.Get("Cache-Control"))
		}
		if sum := sha256.Sum256(body.Body); hex.EncodeToString(sum[:]) != d.SHA256 || int64(len(body.Body)) != d.Bytes {
			t.Fatalf("%s: %d bytes of sha256 %x, the index says %d of %s", d.File, len(body.Body), sum, d.Bytes, d.SHA256)
		}
		rows := readWithArrow(t, body.Body)
		if want := w.leavesOfDay(t, d.Day); int64(len(rows)) != want || d.Rows != want {
			t.Fatalf("%s: %d rows (index: %d), the log holds %d leaves that day", d.Day, len(rows), d.Rows, want)
		}
		for j, r := range rows {
			if r["log_index"] != fmt.Sprint(d.FirstIndex+int64(j)) {
				t.Fatalf("%s row %d: log_index %s, want %d", d.Day, j, r["log_index"], d.FirstIndex+int64(j))
			}
			compareWithAPI(t, node, d.Day, r)
		}
		var m dataset.Manifest
		testenv.Must(t, json.Unmarshal(node.GetRoot(t, "/dataset/"+d.Manifest).Body, &m), "manifest")
		rep, err := dataset.VerifyFile(context.Background(), bytes.NewReader(body.Body), int64(len(body.Body)),
			dataset.VerifyOptions{Verifier: verifier, Manifest: m, FileSHA256: d.SHA256})
		testenv.Must(t, err, "verify %s", d.Day)
		if rep.Rows != d.Rows || rep.BadRow != -1 {
			t.Fatalf("verify %s: %+v", d.Day, rep)
		}
	}
}

// startNode serves the log's routes and the dataset under prefix.
func (w *world) startNode(t *testing.T, prefix string) *apptest.Node {
	t.Helper()
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: blob.PrefixedBucket(w.bucket, prefix), Config: dataset.Config{Prefix: prefix},
		Logger: apptest.Logger()})
	return w.env.StartNode(t, w.served.NodeOptions(t, func(d *app.Deps) { d.Unlimited = append(d.Unlimited, srv.Routes()...) }))
}

// verifier pins the log's key and its witness.
func (w *world) verifier(t *testing.T) *client.LogVerifier {
	t.Helper()
	v, err := client.NewLogVerifier(w.served.VerifierKey)
	testenv.Must(t, err, "log verifier")
	keys := make([]string, len(w.served.Config.Witnesses))
	for i, wt := range w.served.Config.Witnesses {
		keys[i] = wt.VerifierKey
	}
	v, err = v.WithWitnesses(w.served.Config.Quorum, keys...)
	testenv.Must(t, err, "witnesses")
	return v
}

// readWithArrow reads a Parquet file with Apache Arrow's reader into one
// map per row, each value as the API's JSON would spell it.
func readWithArrow(t *testing.T, b []byte) []map[string]string {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	testenv.Must(t, err, "arrow: open the file")
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	testenv.Must(t, err, "arrow: file reader")
	tbl, err := fr.ReadTable(context.Background())
	testenv.Must(t, err, "arrow: read the table")
	defer tbl.Release()
	rows := make([]map[string]string, tbl.NumRows())
	for i := range rows {
		rows[i] = map[string]string{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		i := 0
		for _, chunk := range col.Data().Chunks() {
			for k := 0; k < chunk.Len(); k++ {
				rows[i][col.Name()] = arrowValue(t, chunk, k)
				i++
			}
		}
	}
	return rows
}

func arrowValue(t *testing.T, a arrow.Array, k int) string {
	switch v := a.(type) {
	case *array.Int64:
		return fmt.Sprint(v.Value(k))
	case *array.String:
		return v.Value(k)
	case *array.Boolean:
		return fmt.Sprint(v.Value(k))
	case *array.Timestamp:
		unit := v.DataType().(*arrow.TimestampType).Unit
		return v.Value(k).ToTime(unit).UTC().Format(time.RFC3339)
	case *array.Dictionary:
		return arrowValue(t, v.Dictionary(), v.GetValueIndex(k))
	}
	t.Fatalf("arrow: a column of type %s", a.DataType())
	return ""
}

// compareWithAPI checks a row against GET /attestations/{pda}.
func compareWithAPI(t *testing.T, node *apptest.Node, day string, r map[string]string) {
	t.Helper()
	res := node.Get(t, "/attestations/"+r["pda"])
	if res.Status != http.StatusOK {
		t.Fatalf("%s: the API does not know %s: %d", day, r["pda"], res.Status)
	}
	var body struct{ Data map[string]any }
	dec := json.NewDecoder(bytes.NewReader(res.Body))
	dec.UseNumber()
	testenv.Must(t, dec.Decode(&body), "decode")
	a := body.Data
	for col, field := range map[string]string{"pda": "pda", "agent_pda": "agentPda", "agent_id": "agentId", "action_type": "actionType",
		"action_hash": "actionHash", "tx_signature": "txSignature", "slot": "slot", "timestamp": "timestamp",
		"privacy_mode": "privacyMode", "agent_signature": "agentSignature"} {
		if got, want := r[col], fmt.Sprint(a[field]); got != want {
			t.Fatalf("%s row of %s: column %s is %q, the API says %s %q", day, r["pda"], col, got, field, want)
		}
	}
	if len(r) != 11 {
		t.Fatalf("%s: %d columns, want 11: %v", day, len(r), r)
	}
}
