package web

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDataPageIsReachable: the dataset's page (data.js) is in the bundle,
// the router opens it at #/data, and both the main navigation and the
// footer link it as "Download the data".
func TestDataPageIsReachable(t *testing.T) {
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	js := string(a.files[a.hashed[Entry]].v.JSON)
	if !strings.Contains(js, "// ---- data.js\n") {
		t.Error("the bundle lacks data.js")
	}
	if !regexp.MustCompile(`case "data": cleanup = await dataView\(view\)`).MatchString(js) {
		t.Error(`the router does not open the dataset's page at #/data`)
	}
	index := string(a.index.v.JSON)
	nav, _, _ := strings.Cut(index, "</nav>")
	_, footer, _ := strings.Cut(index, "<footer>")
	link := `<a href="#/data">Download the data</a>`
	if !strings.Contains(nav, link) {
		t.Errorf("the main navigation lacks %s", link)
	}
	if !strings.Contains(footer, link) {
		t.Errorf("the footer lacks %s", link)
	}
}

// TestBytesJS: util.js's bytes writes sizes as the dataset's page shows
// them (binary units, a no-break space before the unit), under Node.js.
func TestBytesJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no Node.js: the browser tests check the sizes shown")
	}
	src, err := assetFS.ReadFile("assets/util.js")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "util.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	run := `import { bytes } from "./util.mjs";
console.log(JSON.stringify([0, 512, 1023, 1024, 98765, 1536000, 5 * 2 ** 30, 3 * 2 ** 50].map(bytes)));
process.exit(0);`
	if err := os.WriteFile(filepath.Join(dir, "run.mjs"), []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "run.mjs")).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := `["0\u00a0B","512\u00a0B","1023\u00a0B","1.0\u00a0KiB","96.5\u00a0KiB","1.5\u00a0MiB","5.0\u00a0GiB","3072\u00a0TiB"]`
	if got := strings.TrimSpace(string(out)); got != strings.ReplaceAll(want, `\u00a0`, "\u00a0") {
		t.Errorf("bytes: %s, want %s", got, want)
	}
}
