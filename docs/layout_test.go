package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/attestd/attestd"

// importable are the packages outside internal/, cmd/ and bench/: the
// design card's packages, the ones other programs import (docs/development.md
// names them public), and the two folders whose package holds only tests.
// Everything else lives under internal/, where the Go toolchain refuses an
// import from another module.
var importable = map[string]string{
	"app":                "card: the REST API",
	"cache":              "card: hot reads from Redis",
	"ratelimit":          "card: per-IP sliding-window limits",
	"indexer":            "card: the chain follower",
	"x402":               "card: the x402 wire format",
	"x402/receipt":       "card: x402's signed receipts",
	"x402/verifier":      "card: the x402 verifier module",
	"x402/x402fiber":     "card: the verifier in front of the premium routes",
	"deploy":             "card: tests of the deployment files (no code)",
	"docs":               "tests of these pages (no code)",
	"attestation":        "public",
	"client":             "public",
	"webhook/signature":  "public",
	"openapi":            "public",
	"translog/logformat": "public",
}

type listedPackage struct {
	path    string // relative to the module
	goFiles []string
	imports []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .GoFiles " "}}|{{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		p := listedPackage{path: strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/"), goFiles: strings.Fields(f[1])}
		for _, imp := range strings.Fields(f[2]) {
			if strings.HasPrefix(imp, module+"/") {
				p.imports = append(p.imports, strings.TrimPrefix(imp, module+"/"))
			}
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list listed %d packages", len(pkgs))
	}
	return pkgs
}

// under says whether a package path lies in the folder dir.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// support says whether a package is test support, a dev tool or a
// benchmark's: never part of what ships.
func support(path string) bool {
	return under(path, "internal/testing") || under(path, "internal/devtools") || under(path, "bench")
}

// TestLayoutSaysWhatShips: the tree keeps production, test support and
// dev tools apart, and the public surface is what docs/development.md
// says. Outside internal/, cmd/ and bench/ only the card's packages and
// the public ones exist; no production package imports test support, a dev
// tool or a benchmark's helpers; nothing directly under internal/ is
// support but the two folders that hold it.
func TestLayoutSaysWhatShips(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
		if !under(p.path, "internal") && !under(p.path, "cmd") && !under(p.path, "bench") {
			if _, ok := importable[p.path]; !ok {
				t.Errorf("%s is importable by any program: move it under internal/, or make it public in docs/development.md and here", p.path)
			}
		}
		if support(p.path) || under(p.path, "cmd") {
			continue
		}
		for _, imp := range p.imports {
			if support(imp) || under(imp, "cmd") {
				t.Errorf("production package %s imports %s (test support, a dev tool or a benchmark's)", p.path, imp)
			}
		}
	}
	var missing []string
	for p := range importable {
		if !seen[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("importable lists packages that do not exist: %v", missing)
	}

	dev, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	for p, why := range importable {
		if strings.HasPrefix(why, "public") && !strings.Contains(string(dev), "`"+p+"`") {
			t.Errorf("docs/development.md does not name the public package %s", p)
		}
	}
	for _, name := range []string{"testing", "devtools"} {
		if _, err := os.Stat(filepath.Join(root, "internal", name)); err != nil {
			t.Errorf("internal/%s: %v", name, err)
		}
	}
}

// TestOnlyTheWiringImportsApp: features share the API's conventions
// through internal/httpapi and join a node by Routes(httpapi.Router), so
// no production package but the wiring (internal/node) imports app; and
// app takes every feature in its Deps, before it serves, with no setter
// (docs/development.md, Wiring).
func TestOnlyTheWiringImportsApp(t *testing.T) {
	for _, p := range listPackages(t) {
		if support(p.path) || under(p.path, "cmd") || p.path == "internal/node" {
			continue
		}
		for _, imp := range p.imports {
			if imp == "app" {
				t.Errorf("production package %s imports app: use internal/httpapi's helpers and httpapi.Router", p.path)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "app", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	setter := regexp.MustCompile(`(?m)^func \(a \*API\) Set[A-Z]\w*\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := setter.Find(b); m != nil {
			t.Errorf("%s: %s: app.API takes its features in Deps, not by a setter after New", filepath.Base(f), m)
		}
	}
}
