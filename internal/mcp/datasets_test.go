package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/datasetfixture"
	"github.com/attestd/attestd/internal/testing/testenv"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"gocloud.dev/blob"
)

// datasetBucket writes a bucket holding a file and its manifest for each
// of days and, unless days is empty, their index, as attestd dataset
// writes them (datasetfixture).
func datasetBucket(t *testing.T, days ...string) *blob.Bucket {
	t.Helper()
	b, _ := datasetfixture.Write(t, dataset.Pending{Day: "2026-11-28", Code: dataset.PendingDayOpen, Reason: "the day is not over in the log"}, days...)
	return b
}

// datasetNode starts a node over env serving bucket's dataset (nil: the
// dataset is off), mounted as `attestd serve` mounts it.
func datasetNode(t *testing.T, env *apptest.Env, bucket *blob.Bucket) *apptest.Node {
	t.Helper()
	srv := dataset.NewServer(dataset.ServerDeps{Bucket: bucket, Logger: apptest.Logger()})
	return env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.Unlimited = append(d.Unlimited, srv.Routes()...) }})
}

// TestListDatasetsSchema: the tool is listed, free and read-only, with
// its input's bounds, its output's shape and a description that sends an
// agent to the files.
func TestListDatasetsSchema(t *testing.T) {
	t.Parallel()
	cs := connect(t, mcp.Config{APIURL: "http://127.0.0.1:1"})
	res, err := cs.ListTools(context.Background(), nil)
	testenv.Must(t, err, "list tools")
	var tool *mcpsdk.Tool
	for _, tl := range res.Tools {
		if tl.Name == mcp.ToolListDatasets {
			tool = tl
		}
	}
	if tool == nil || !tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
		t.Fatalf("%s not listed read-only with an output schema: %+v", mcp.ToolListDatasets, tool)
	}
	for _, w := range []string{"instead of paging", "list_attestations", "attestd verify --dataset", "pending", "day_open", "awaiting_checkpoint", "not_started"} {
		if !strings.Contains(tool.Description, w) {
			t.Errorf("the description lacks %q: %s", w, tool.Description)
		}
	}
	var in, out struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	for _, s := range []struct {
		schema any
		into   any
	}{{tool.InputSchema, &in}, {tool.OutputSchema, &out}} {
		b, err := json.Marshal(s.schema)
		testenv.Must(t, err, "encode a schema")
		testenv.Must(t, json.Unmarshal(b, s.into), "decode a schema")
	}
	for name, want := range map[string][]string{"since": {`"pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`, "YYYY-MM-DD"},
		"limit": {`"minimum":1`, `"maximum":366`, "default 31"}} {
		for _, w := range want {
			if !strings.Contains(string(in.Properties[name]), w) {
				t.Errorf("input %s lacks %s: %s", name, w, in.Properties[name])
			}
		}
	}
	if len(in.Required) != 0 {
		t.Errorf("inputs required: %v", in.Required)
	}
	for _, p := range []string{"indexUrl", "days", "totalDays", "totalRows", "nextIndex", "pending"} {
		if out.Properties[p] == nil {
			t.Errorf("output has no %s", p)
		}
	}
	for _, p := range []string{"day", "rows", "bytes", "sha256", "fileUrl", "manifestUrl", "firstIndex", "lastIndex", "witnessedBy", "witnessedOf"} {
		if !strings.Contains(string(out.Properties["days"]), `"`+p+`"`) {
			t.Errorf("output days lack %s: %s", p, out.Properties["days"])
		}
	}
}

// TestListDatasetsRefusesBadInput before any request.
func TestListDatasetsRefusesBadInput(t *testing.T) {
	t.Parallel()
	counter := &countingTransport{}
	cs := connect(t, mcp.Config{APIURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: counter}})
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"since": "yesterday"}, "since"},
		{map[string]any{"since": "2026-11-1"}, "since"},
		{map[string]any{"since": "2026-02-30"}, `since must be a UTC day written YYYY-MM-DD (2026-11-01), got "2026-02-30"`},
		{map[string]any{"since": 20261101}, "since"},
		{map[string]any{"limit": 0}, "limit"},
		{map[string]any{"limit": 367}, "limit"},
		{map[string]any{"limit": -1}, "limit"},
		{map[string]any{"days": 3}, "days"},
	} {
		res := call(t, cs, mcp.ToolListDatasets, tc.args)
		if !res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), tc.want) {
			t.Errorf("%v: want a tool error naming %q, got %+v: %s", tc.args, tc.want, res, text(res))
		}
	}
	if n := counter.n.Load(); n != 0 {
		t.Fatalf("%d requests made for bad input", n)
	}
}

func TestListDatasets(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 1})
	node := datasetNode(t, env, datasetBucket(t, "2026-11-25", "2026-11-26", "2026-11-27"))
	cs := connect(t, mcp.Config{APIURL: node.URL}) // the API base: the files are at the root all the same
	list := func(t *testing.T, args map[string]any) (mcp.DatasetsOutput, string) {
		t.Helper()
		res := call(t, cs, mcp.ToolListDatasets, args)
		var out mcp.DatasetsOutput
		structured(t, res, &out)
		if out.TotalDays != 3 || out.TotalRows != 6 || out.NextIndex != 6 || out.IndexURL != node.Root+"/dataset/index.json" ||
			len(out.Pending) != 1 || out.Pending[0].Code != "day_open" || out.Pending[0].Day != "2026-11-28" {
			t.Fatalf("%v: %+v", args, out)
		}
		return out, text(res)
	}
	days := func(out mcp.DatasetsOutput) string {
		var s []string
		for _, d := range out.Days {
			s = append(s, d.Day)
		}
		return strings.Join(s, " ")
	}

	out, txt := list(t, map[string]any{})
	if days(out) != "2026-11-25 2026-11-26 2026-11-27" {
		t.Fatalf("days %s", days(out))
	}
	hc := &http.Client{Transport: apptest.Transport(t, nil)}
	for i, d := range out.Days {
		if d.FileURL != node.Root+"/dataset/"+d.Day+".parquet" || d.ManifestURL != node.Root+"/dataset/"+d.Day+".json" ||
			d.Rows != 2 || d.FirstIndex != int64(2*i) || d.LastIndex != int64(2*i+1) || d.WitnessedBy != 2 || d.WitnessedOf != 3 {
			t.Errorf("day %+v", d)
		}
	}
	// The file is where fileUrl says, the one the digest names.
	last := out.Days[2]
	body := fetch(t, hc, last.FileURL)
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != last.SHA256 || int64(len(body)) != last.Bytes {
		t.Errorf("%s: %d bytes, SHA-256 %x; listed %d, %s", last.FileURL, len(body), sum, last.Bytes, last.SHA256)
	}
	for _, w := range []string{"3 daily Parquet files, 2026-11-25 to 2026-11-27: 6 attestations", last.FileURL, last.SHA256,
		"rather than paging list_attestations", "attestd verify --dataset 2026-11-27.parquet --url " + node.Root + " --log-key",
		"Pending 2026-11-28: day_open (the day is not over in the log)."} {
		if !strings.Contains(txt, w) {
			t.Errorf("text lacks %q:\n%s", w, txt)
		}
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"limit": 2}, "2026-11-26 2026-11-27"},
		{map[string]any{"since": "2026-11-26"}, "2026-11-26 2026-11-27"},
		{map[string]any{"since": "2026-11-26", "limit": 1}, "2026-11-27"},
		{map[string]any{"since": "2000-01-01", "limit": 366}, "2026-11-25 2026-11-26 2026-11-27"},
		{map[string]any{"since": "2026-11-28"}, ""},
	} {
		if out, txt := list(t, tc.args); days(out) != tc.want || out.Days == nil {
			t.Errorf("%v: days %q, want %q\n%s", tc.args, days(out), tc.want, txt)
		} else if tc.want == "" && !strings.Contains(txt, "No daily file on or after 2026-11-28; the dataset holds 3 days") {
			t.Errorf("%v: text %s", tc.args, txt)
		}
	}
}

func fetch(t *testing.T, hc *http.Client, url string) []byte {
	t.Helper()
	res, err := hc.Get(url)
	testenv.Must(t, err, "GET %s", url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read %s", url)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return b
}

// TestListDatasetsOffAndNotStarted: a node without the dataset (503) is a
// tool error that says so; a node whose producer has not run lists nothing
// and says why.
func TestListDatasetsOffAndNotStarted(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 1, Attestations: 1})
	off := connect(t, mcp.Config{APIURL: datasetNode(t, env, nil).Root})
	res := call(t, off, mcp.ToolListDatasets, map[string]any{})
	for _, w := range []string{"The dataset is off on this attestd node", "503", "ATTESTD_DATASET_BUCKET", "Page with list_attestations"} {
		if !res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), w) {
			t.Errorf("dataset off: want a tool error with %q, got %+v: %s", w, res, text(res))
		}
	}

	empty := connect(t, mcp.Config{APIURL: datasetNode(t, env, datasetBucket(t)).Root})
	res = call(t, empty, mcp.ToolListDatasets, map[string]any{})
	var out mcp.DatasetsOutput
	structured(t, res, &out)
	if out.TotalDays != 0 || len(out.Days) != 0 || out.Days == nil || len(out.Pending) != 1 || out.Pending[0].Code != "not_started" {
		t.Fatalf("not started: %+v", out)
	}
	if txt := text(res); !strings.Contains(txt, "The dataset holds no daily file yet.") || !strings.Contains(txt, "Pending next: not_started") {
		t.Errorf("text %s", txt)
	}
}
