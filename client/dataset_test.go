package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/datasetfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	"gocloud.dev/blob"
)

// writeDataset writes a bucket holding two days' files, their manifests
// and their index, as attestd dataset writes them (datasetfixture).
func writeDataset(t *testing.T, days ...string) (*blob.Bucket, dataset.Index) {
	t.Helper()
	return datasetfixture.Write(t, dataset.Pending{Day: "2026-12-01", Code: dataset.PendingCheckpoint, Reason: "no checkpoint covers it yet"}, days...)
}

// datasetNode starts a node over env serving the dataset of bucket (nil:
// the dataset is off), as `attestd serve` mounts it.
func datasetNode(t *testing.T, env *apptest.Env, bucket *blob.Bucket) *apptest.Node {
	t.Helper()
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: bucket, Logger: apptest.Logger()})
	return env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Unlimited = append(d.Unlimited, srv.Routes()...) }})
}

// sameJSON reports whether a and b encode to the same JSON value.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y any
	for _, p := range []struct {
		in  any
		out *any
	}{{a, &x}, {b, &y}} {
		j, err := json.Marshal(p.in)
		testenv.Must(t, err, "encode")
		testenv.Must(t, json.Unmarshal(j, p.out), "decode")
	}
	return reflect.DeepEqual(x, y)
}

func TestDatasetIndex(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 1})
	bucket, want := writeDataset(t, "2026-11-25", "2026-11-27")
	node := datasetNode(t, env, bucket)
	// The API base: the dataset is at the origin's root all the same.
	c := newClient(t, node.URL)
	idx, err := c.DatasetIndex(ctx(t))
	testenv.Must(t, err, "DatasetIndex")
	if !sameJSON(t, idx, want) || len(idx.Days) != 2 || idx.Days[1].Witnessed != (client.DatasetWitnessed{By: 2, Of: 3, Quorum: 2}) ||
		idx.Pending[0].Code != client.DatasetAwaitingCheckpoint {
		t.Fatalf("index %+v\nwant %+v", idx, want)
	}
	// Each day's file and manifest are where the URLs say, as the index describes them.
	hc := &http.Client{Transport: apptest.Transport(t, nil)}
	for _, d := range idx.Days {
		body := get(t, hc, c.DatasetFileURL(d.Day))
		sum := sha256.Sum256(body)
		if int64(len(body)) != d.Bytes || hex.EncodeToString(sum[:]) != d.SHA256 {
			t.Errorf("%s: %d bytes of SHA-256 %x, the index says %d of %s", c.DatasetFileURL(d.Day), len(body), sum, d.Bytes, d.SHA256)
		}
		var m struct{ Day, File, SHA256 string }
		testenv.Must(t, json.Unmarshal(get(t, hc, c.DatasetManifestURL(d.Day)), &m), "manifest")
		if m.Day != d.Day || m.File != d.File || m.SHA256 != d.SHA256 {
			t.Errorf("%s: %+v", c.DatasetManifestURL(d.Day), m)
		}
	}

	// The dataset off: 503 UNAVAILABLE, ErrDatasetOff.
	off := newClient(t, datasetNode(t, env, nil).Root)
	_, err = off.DatasetIndex(ctx(t))
	if e, ok := client.AsAPIError(err); !errors.Is(err, client.ErrDatasetOff) || !ok || e.Status != http.StatusServiceUnavailable || e.Code != "UNAVAILABLE" {
		t.Fatalf("dataset off: %v", err)
	}
}

func get(t *testing.T, hc *http.Client, url string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, url, nil)
	testenv.Must(t, err, "request")
	res, err := hc.Do(req)
	testenv.Must(t, err, "GET %s", url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read %s", url)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return b
}

// TestDatasetIndexReadsTheRecordedAnswer: the client reads the answer of
// getDatasetIndex recorded in openapi/testdata/answers as it was sent.
func TestDatasetIndexReadsTheRecordedAnswer(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "openapi", "testdata", "answers", "getDatasetIndex.200.json"))
	testenv.Must(t, err, "recording")
	var rec struct {
		Path string          `json:"path"`
		Body json.RawMessage `json:"body"`
	}
	testenv.Must(t, json.Unmarshal(raw, &rec), "decode the recording")
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(rec.Body)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/api/v1")
	idx, err := c.DatasetIndex(ctx(t))
	testenv.Must(t, err, "DatasetIndex")
	var want any
	testenv.Must(t, json.Unmarshal(rec.Body, &want), "decode the body")
	if asked != rec.Path || !sameJSON(t, idx, want) || len(idx.Days) != 1 || idx.Days[0].Witnessed.Quorum != 1 {
		t.Fatalf("asked %s; read %+v", asked, idx)
	}
}

func TestDatasetURLs(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"https://attestd.example", "https://attestd.example/api/v1/"} {
		c := newClient(t, base)
		for got, want := range map[string]string{
			c.DatasetIndexURL():                  "https://attestd.example/dataset/index.json",
			c.DatasetFileURL("2026-11-27"):       "https://attestd.example/dataset/2026-11-27.parquet",
			c.DatasetManifestURL("2026-11-27"):   "https://attestd.example/dataset/2026-11-27.json",
			c.DatasetFileURL("../api/v1/health"): "https://attestd.example/dataset/..%2Fapi%2Fv1%2Fhealth.parquet",
		} {
			if got != want {
				t.Errorf("%s: %s, want %s", base, got, want)
			}
		}
	}
}
