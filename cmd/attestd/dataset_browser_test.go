package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/dataset"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/chromedp/chromedp"
	"golang.org/x/mod/sumdb/note"
)

// datasetFixture is a dataset's bucket (file://) as the producer leaves
// it under the default prefix: the index, each day's manifest and a
// stand-in for each file. days are oldest first, as the index lists them.
func datasetFixture(t *testing.T, origin string, days []dataset.IndexDay, pending []dataset.Pending) (bucket string) {
	t.Helper()
	dir := t.TempDir()
	objects := filepath.Join(dir, "dataset", "v1")
	testenv.Must(t, os.MkdirAll(objects, 0o755), "bucket directory")
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		testenv.Must(t, err, "encode %s", name)
		testenv.Must(t, os.WriteFile(filepath.Join(objects, name), b, 0o644), "write %s", name)
	}
	next := int64(0)
	for _, d := range days {
		m := dataset.Manifest{Format: "attestd-dataset/v1", Day: d.Day, File: d.File, Rows: d.Rows, FirstIndex: d.FirstIndex, LastIndex: d.LastIndex,
			Bytes: d.Bytes, SHA256: d.SHA256, Witnessed: d.Witnessed, Proof: dataset.Proof{TreeSize: d.CheckpointSize},
			CutAt: attestation.At(time.Date(2026, 11, 29, 0, 5, 0, 0, time.UTC))}
		write(d.Manifest, m)
		// A stand-in of the size the manifest says (sparse: nothing reads it).
		f, err := os.Create(filepath.Join(objects, d.File))
		testenv.Must(t, err, "create %s", d.File)
		testenv.Must(t, f.Truncate(d.Bytes), "size %s", d.File)
		testenv.Must(t, f.Close(), "close %s", d.File)
		next = d.LastIndex + 1
	}
	if days == nil {
		days = []dataset.IndexDay{}
	}
	write(dataset.IndexName, dataset.Index{Format: "attestd-dataset/v1", Origin: origin, UpdatedAt: attestation.At(time.Now().Add(-3 * time.Minute)),
		Days: days, NextIndex: next, Pending: pending})
	return "file://" + dir
}

// fixtureDay is a day's entry in the index.
func fixtureDay(day string, rows, first, bytes int64, by, of int) dataset.IndexDay {
	return dataset.IndexDay{Day: day, File: day + ".parquet", Manifest: day + ".json", Rows: rows, FirstIndex: first, LastIndex: first + rows - 1,
		Bytes: bytes, SHA256: strings.Repeat("ab", 32), CheckpointSize: first + rows + 10, Witnessed: dataset.Witnessed{By: by, Of: of, Quorum: of}}
}

// datasetServed waits until the node answers GET /dataset/index.json
// with status, or fails the test saying the node does not serve it.
func datasetServed(t *testing.T, n *webNode, status int) {
	t.Helper()
	res, err := http.Get(n.root + "/dataset/" + dataset.IndexName)
	testenv.Must(t, err, "GET /dataset/index.json")
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	if res.StatusCode != status {
		t.Fatalf("GET /dataset/index.json: %d %s, want %d: the node does not serve the dataset as docs/dataset.md says (internal/dataset's server)", res.StatusCode, b, status)
	}
}

// TestDatasetBrowserPage opens the dataset's page (#/data) of a node
// serving a bucket with three days and a pending one, at a phone's and a
// desktop's width (and the others of widths): the days newest first with
// formatted figures, "Witnessed by 1 of 1", links to each file (a
// download) and manifest, the pending reason, one-liners naming this
// node, the newest day and the log's key; nothing wider than the screen,
// no word broken in the table, no serious axe violation.
func TestDatasetBrowserPage(t *testing.T) {
	t.Parallel()
	src := axeSource(t)
	_, vkey, err := note.GenerateKey(rand.Reader, "attestd.test/log")
	testenv.Must(t, err, "log key")
	days := []dataset.IndexDay{fixtureDay("2026-11-26", 3, 0, 2048, 0, 0), fixtureDay("2026-11-27", 1234, 3, 98765, 1, 1),
		fixtureDay("2026-11-28", 1234567, 1237, 123456789, 1, 1)}
	reason := "the day is open: its file is cut once it is over and a witnessed checkpoint covers its last leaf"
	bucket := datasetFixture(t, "attestd.test/log", days, []dataset.Pending{{Day: "2026-11-29", Code: dataset.PendingDayOpen, Reason: reason}})
	b := startBrowser(t)
	n := startWebNodeEnv(t, 1, 5, []string{"ATTESTD_DATASET_BUCKET=" + bucket, "ATTESTD_LOG_KEY=" + vkey})
	datasetServed(t, n, http.StatusOK)

	// Reached from the main navigation.
	b.do(t, "open the home page", chromedp.Navigate(n.root+"/#/"))
	b.waitFor(t, "the home page", rendered("#/"), 20*time.Second)
	b.do(t, "follow the navigation", chromedp.Click(chromedp.CSS(`nav a[href="#/data"]`)))
	ready := rendered("#/data") + ` && document.querySelector("#day-rows tr[data-day]") && document.getElementById("use-verify")`
	b.waitFor(t, "the dataset's page", ready, 20*time.Second)
	if cur := eval[string](t, b, `document.querySelector('nav a[aria-current="page"]').getAttribute("href")`); cur != "#/data" {
		t.Errorf("the navigation marks %q as the current page", cur)
	}
	for _, w := range []int64{390, 1440, 360, 768} {
		what := fmt.Sprintf("dataset page at %d px", w)
		b.do(t, "viewport", chromedp.EmulateViewport(w, 900))
		b.do(t, "open "+what, chromedp.Navigate(n.root+"/#/data"))
		b.waitFor(t, what, ready, 20*time.Second)
		checkDatasetPage(t, b, n, what, vkey, reason)
		b.fits(t, what)
		b.wordsWhole(t, what)
		b.axe(t, src, what)
		b.shootWidth(t, "dataset", w)
	}
	b.do(t, "viewport back", chromedp.EmulateViewport(1200, 900))
	b.checkPage(t, "dataset page")

	// The links lead to what the node serves (the file asked with HEAD).
	for _, p := range []string{"/dataset/2026-11-28.parquet", "/dataset/2026-11-28.json"} {
		req, err := http.NewRequest(map[bool]string{true: http.MethodHead, false: http.MethodGet}[strings.HasSuffix(p, ".parquet")], n.root+p, nil)
		testenv.Must(t, err, "request %s", p)
		res, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "%s %s", req.Method, p)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s %s, linked from the page: %d", req.Method, p, res.StatusCode)
		}
	}
}

// checkDatasetPage holds the page shown to the fixture of
// TestDatasetBrowserPage.
func checkDatasetPage(t *testing.T, b *browser, n *webNode, what, vkey, reason string) {
	t.Helper()
	rows := eval[[][]string](t, b, `[...document.querySelectorAll("#day-rows tr[data-day]")].map((r) => [r.dataset.day,
		...[...r.cells].slice(1, 5).map((c) => c.textContent)])`)
	want := [][]string{
		{"2026-11-28", "1,234,567", "118\u00a0MiB", "1,237–1,235,803", "Witnessed by 1 of 1"},
		{"2026-11-27", "1,234", "96.5\u00a0KiB", "3–1,236", "Witnessed by 1 of 1"},
		{"2026-11-26", "3", "2.0\u00a0KiB", "0–2", "not witnessed"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("%s: rows %q, want %q", what, rows, want)
	}
	links := eval[[][]string](t, b, `[...document.querySelectorAll("#day-rows tr[data-day]")].map((r) => [...r.querySelectorAll("a[data-file]")]
		.map((a) => a.dataset.file + " " + a.href + " " + (a.getAttribute("download") || "-")))`)
	if len(links) != 3 || len(links[0]) != 2 || links[0][0] != "parquet "+n.root+"/dataset/2026-11-28.parquet 2026-11-28.parquet" ||
		links[0][1] != "manifest "+n.root+"/dataset/2026-11-28.json -" || !strings.HasSuffix(strings.Fields(links[2][0])[1], ".parquet") {
		t.Errorf("%s: file links %q", what, links)
	}
	if got := eval[string](t, b, `document.getElementById("pending").innerText`); !strings.Contains(got, "2026-11-29") || !strings.Contains(got, reason) {
		t.Errorf("%s: not out yet: %q", what, got)
	}
	use := eval[[]string](t, b, `["use-duckdb", "use-verify"].map((id) => document.getElementById(id).textContent)`)
	file := n.root + "/dataset/2026-11-28.parquet"
	if use[0] != "SELECT count(*) FROM '"+file+"';" ||
		use[1] != "curl -sO "+file+" && attestd verify --dataset 2026-11-28.parquet --url "+n.root+" --log-key "+vkey {
		t.Errorf("%s: one-liners %q", what, use)
	}
	if got := eval[[]string](t, b, `[...document.querySelectorAll(".use button.copy")].map((b) => b.dataset.copy)`); fmt.Sprint(got) != fmt.Sprint(use) {
		t.Errorf("%s: the copy buttons copy %q, the lines say %q", what, got, use)
	}
	if got := eval[string](t, b, `document.getElementById("dataset-summary").innerText`); !strings.Contains(got, "3 days, 1,235,804 rows in all") ||
		!strings.Contains(got, "attestd.test/log") || !strings.Contains(got, "leaf 1,235,804") {
		t.Errorf("%s: summary %q", what, got)
	}
}

// TestDatasetBrowserEmptyAndOff: before the first day is cut the page
// says why there is nothing yet and what is pending; on a node without a
// bucket it says the dataset is off there, with the node's message.
func TestDatasetBrowserEmptyAndOff(t *testing.T) {
	t.Parallel()
	reason := "awaiting a witnessed checkpoint: the newest covers leaf 40, the day ends at leaf 57"
	bucket := datasetFixture(t, "attestd.test/log", nil, []dataset.Pending{{Day: "2026-11-28", Code: dataset.PendingCheckpoint, Reason: reason}})
	b := startBrowser(t)
	empty := startWebNodeEnv(t, 1, 5, []string{"ATTESTD_DATASET_BUCKET=" + bucket})
	off := startWebNodeEnv(t, 1, 5, nil)
	datasetServed(t, empty, http.StatusOK)
	datasetServed(t, off, http.StatusServiceUnavailable)

	for _, w := range []int64{390, 1440} {
		b.do(t, "viewport", chromedp.EmulateViewport(w, 900))
		what := fmt.Sprintf("empty dataset page at %d px", w)
		b.do(t, "open "+what, chromedp.Navigate(empty.root+"/#/data"))
		b.waitFor(t, what, rendered("#/data")+` && document.getElementById("dataset-empty")`, 20*time.Second)
		if got := eval[string](t, b, `document.querySelector("main").innerText`); !strings.Contains(got, "once the day is over") ||
			!strings.Contains(got, "Not out yet") || !strings.Contains(got, reason) {
			t.Errorf("%s says:\n%s", what, got)
		}
		if eval[bool](t, b, `!!document.querySelector("#days, .use")`) {
			t.Errorf("%s shows a table or one-liners without a day", what)
		}
		b.fits(t, what)
		b.shootWidth(t, "dataset-empty", w)

		what = fmt.Sprintf("dataset page of a node without one at %d px", w)
		b.do(t, "open "+what, chromedp.Navigate(off.root+"/#/data"))
		b.waitFor(t, what, rendered("#/data")+` && document.getElementById("dataset-off")`, 20*time.Second)
		if got := eval[string](t, b, `document.getElementById("dataset-off").innerText`); !strings.HasPrefix(got, "The dataset is off on this node: ") ||
			!strings.Contains(got, "ATTESTD_DATASET_BUCKET") {
			t.Errorf("%s says %q", what, got)
		}
		b.fits(t, what)
		b.shootWidth(t, "dataset-off", w)
	}
	b.checkPage(t, "dataset page, off")
}
