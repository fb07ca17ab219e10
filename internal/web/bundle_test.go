package web

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsBundle: the embedded modules bundle (every import resolves to
// an export, no cycle), the bundle is valid JavaScript to Node.js (when it
// is installed), and every served name carries its content's hash.
func TestAssetsBundle(t *testing.T) {
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range served {
		h := a.hashed[plain]
		if !hashedName.MatchString(h) || a.files[h] == nil || a.files[plain] == nil {
			t.Fatalf("%s: hashed name %q", plain, h)
		}
		if a.files[h].control != ImmutableCacheControl || a.files[plain].control != AssetCacheControl {
			t.Errorf("%s: caching %q and %q", plain, a.files[h].control, a.files[plain].control)
		}
	}
	index := string(a.index.v.JSON)
	for _, plain := range served {
		if !strings.Contains(index, "/assets/"+a.hashed[plain]) {
			t.Errorf("the page does not name %s by its hash", plain)
		}
	}
	if n := len(regexp.MustCompile(`<script`).FindAllString(index, -1)); n != 1 {
		t.Errorf("the page loads %d scripts, want the one bundle", n)
	}
	css := string(a.files[a.hashed["style.css"]].v.JSON)
	if !strings.Contains(css, "/assets/"+a.hashed["favicon.svg"]) {
		t.Errorf("the stylesheet does not name the icon by its hash")
	}
	js := string(a.files[a.hashed[Entry]].v.JSON)
	for _, m := range []string{"util.js", "explorer.js", "home.js", "search.js", "console.js", "apiref.js", "chart.js", "live.js", "logproof.js", "webhooks.js", "devwallet.js"} {
		if !strings.Contains(js, "// ---- "+m+"\n") {
			t.Errorf("the bundle lacks %s", m)
		}
	}
	if regexp.MustCompile(`(?m)^(import|export)\b`).MatchString(js) {
		t.Error("the bundle keeps an import or export line")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("no Node.js: the bundle's syntax is checked by the browser tests only")
		return
	}
	f := filepath.Join(t.TempDir(), "bundle.mjs")
	if err := os.WriteFile(f, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
		t.Fatalf("node --check of the bundle: %v\n%s", err, out)
	}
}

// TestBundleRefuses: the forms bundle does not read are refused at start,
// with the file and line.
func TestBundleRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  map[string]string
		want string
	}{
		{"default export", map[string]string{"a.js": "export default 1;"}, "a.js:1"},
		{"export list", map[string]string{"a.js": "const x = 1;\nexport { x };"}, "a.js:2"},
		{"export let", map[string]string{"a.js": "export let x = 1;"}, "a.js:1"},
		{"namespace import", map[string]string{"a.js": `import * as b from "./b.js";`, "b.js": ""}, "a.js:1"},
		{"multi-line import", map[string]string{"a.js": "import {\n x } from \"./b.js\";", "b.js": "export const x = 1;"}, "a.js:1"},
		{"dynamic import", map[string]string{"a.js": `const m = await import("./b.js");`, "b.js": ""}, "dynamic import"},
		{"missing module", map[string]string{"a.js": `import { x } from "./b.js";`}, "b.js, which does not exist"},
		{"missing export", map[string]string{"a.js": `import { y } from "./b.js";`, "b.js": "export const x = 1;"}, "does not export"},
		{"cycle", map[string]string{"a.js": `import { x } from "./b.js";`, "b.js": `import { y } from "./a.js";` + "\nexport const x = 1;"}, "cycles"},
		{"another directory", map[string]string{"a.js": `import { x } from "../b.js";`}, "a.js:1"},
	} {
		_, err := bundle("a.js", tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	// What it reads: aliases, several modules, evaluation order.
	js, err := bundle("a.js", map[string]string{
		"a.js": "import { x as y, f } from \"./b.js\";\nimport { z } from \"./c.js\";\nexport const out = [y, f(), z];",
		"b.js": "import { z } from \"./c.js\";\nexport const x = z + 1;\nexport async function g() {}\nexport function f() { return 2; }",
		"c.js": "export const z = 40;\nexport class K {}",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Index(js, "// ---- c.js") > strings.Index(js, "// ---- b.js") || strings.Index(js, "// ---- b.js") > strings.Index(js, "// ---- a.js") {
		t.Errorf("modules out of order:\n%s", js)
	}
	for _, want := range []string{"const { x: y, f } = m_b;", "return { x, g, f };", "return { z, K };"} {
		if !strings.Contains(js, want) {
			t.Errorf("bundle lacks %q:\n%s", want, js)
		}
	}
	if node, err := exec.LookPath("node"); err == nil {
		out, err := exec.Command(node, "--input-type=module", "-e", js+"\nconsole.log(JSON.stringify(m_a.out));").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "[41,2,40]" {
			t.Errorf("the bundle evaluates to %s (%v), want [41,2,40]", out, err)
		}
	}
}
