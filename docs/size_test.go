package docs

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// Limits of one file and one function (docs/development.md, Code layout):
// a file over maxFileLines holds more than one job; a function over
// maxFuncLines does several things one after the other, each of which
// wants a name.
const (
	maxFileLines = 800
	maxFuncLines = 80
)

// longFuncs are the functions allowed past maxFuncLines, each with the
// reason it reads best whole. At most three.
var longFuncs = map[string]string{}

// TestFilesAndFunctionsStaySmall: no Go file outside bench/ is over 800
// lines, and no function or function literal outside bench/ (test code
// included in the file count, not in the function count) is over 80 lines,
// but the few in longFuncs.
func TestFilesAndFunctionsStaySmall(t *testing.T) {
	if len(longFuncs) > 3 {
		t.Errorf("%d functions are allowed past %d lines: at most three", len(longFuncs), maxFuncLines)
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "bench" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > maxFileLines {
			t.Errorf("%s is %d lines: split it by job (at most %d)", rel, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var long []string
	seen := map[string]bool{}
	testenv.GoSources(t, root, func(rel string, fset *token.FileSet, f *ast.File) {
		if strings.HasPrefix(rel, "bench/") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			lines := fset.Position(body.End()).Line - fset.Position(n.Pos()).Line + 1
			if lines > maxFuncLines {
				key := rel + ":" + name
				seen[key] = true
				if _, ok := longFuncs[key]; !ok {
					long = append(long, key)
				}
			}
			return true
		})
	})
	sort.Strings(long)
	for _, key := range long {
		t.Errorf("%s is over %d lines: split it by phase", key, maxFuncLines)
	}
	for key := range longFuncs {
		if !seen[key] {
			t.Errorf("longFuncs lists %s, which is no longer long (or gone): remove it", key)
		}
	}
}
