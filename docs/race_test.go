package docs

import (
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// harnesses are packages whose own code starts goroutines but that are tools
// or test harnesses rather than parts of a serving process: the command (its
// tests drive the built binary, whose packages are raced on their own), the
// load generators, and the servers and fleets the tests start. The race
// detector checks the goroutines of the packages they drive, in those
// packages' own tests.
var harnesses = map[string]string{
	"cmd/attestd":                   "the command: its tests run the built binary",
	"internal/testing/":             "test support: shared stores, test nodes, fixtures, the hostile matrix",
	"internal/devtools/devstack":    "starts PostgreSQL, Redis and nginx for tests",
	"internal/devtools/fleet":       "starts a fleet of processes for make cluster",
	"internal/devtools/litewitness": "starts witness processes for tests",
	"internal/devtools/seed":        "demo data loader run by make run",
	"bench/":                        "load generators run by make bench, and their support",
}

// racePackages reads RACE_PKGS from the Makefile.
func racePackages(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?ms)^RACE_PKGS :=(.*?)[^\\]\n`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Makefile: no RACE_PKGS")
	}
	var pkgs []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(m[0][len("RACE_PKGS :="):]), "\\", " ")) {
		if strings.HasSuffix(f, "/...") {
			t.Errorf("RACE_PKGS names %s: list packages one by one, so a package without goroutines is not raced by accident", f)
		}
		pkgs = append(pkgs, strings.TrimPrefix(f, "./"))
	}
	return pkgs
}

// concurrentPackages walks the repository for packages whose non-test files
// hold a go statement.
func concurrentPackages(t *testing.T) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	testenv.GoSources(t, root, func(rel string, _ *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.GoStmt); ok {
				found[path.Dir(rel)] = true
				return false
			}
			return true
		})
	})
	return found
}

func harness(pkg string) bool {
	for h := range harnesses {
		if pkg == h || strings.HasSuffix(h, "/") && strings.HasPrefix(pkg, h) {
			return true
		}
	}
	return false
}

// TestRacePackagesAreTheConcurrentOnes keeps make test's race list true to
// docs/development.md: every package whose own code starts goroutines runs
// under the race detector, and no other does (the race detector costs each
// package several times its time, and the suite has a budget).
func TestRacePackagesAreTheConcurrentOnes(t *testing.T) {
	listed := racePackages(t)
	concurrent := concurrentPackages(t)
	inList := map[string]bool{}
	for _, p := range listed {
		inList[p] = true
		if !concurrent[p] {
			t.Errorf("RACE_PKGS names %s, whose own code starts no goroutine: it belongs in the plain half", p)
		}
		if harness(p) {
			t.Errorf("RACE_PKGS names %s, which is a harness (%s)", p, harnesses[p])
		}
	}
	var missing []string
	for p := range concurrent {
		if !inList[p] && !harness(p) {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("%s starts goroutines but is not in the Makefile's RACE_PKGS", p)
	}
}
