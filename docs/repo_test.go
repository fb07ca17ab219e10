package docs

import (
	"bytes"
	"go/ast"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// maxTrackedBytes is the most a tracked file outside testdata/ may weigh.
const maxTrackedBytes = 1 << 20

// executableMagic are the first bytes of the executable formats a build
// leaves behind: ELF, Mach-O (both widths, both byte orders) and PE.
var executableMagic = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe},
	{'M', 'Z'},
}

// TestNothingBuiltIsTracked: no tracked file is an executable, and none
// outside testdata/ is larger than 1 MiB (docs/development.md, Layout). A
// binary committed once stays in every clone's history.
func TestNothingBuiltIsTracked(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout: nothing is tracked")
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files", len(files))
	}
	for _, name := range files {
		path := filepath.Join(root, name)
		info, err := os.Lstat(path)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		testdata := strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/")
		if info.Size() > maxTrackedBytes && !testdata {
			t.Errorf("%s is %d bytes: files over 1 MiB belong in testdata/ or outside the repository", name, info.Size())
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		f.Close()
		for _, magic := range executableMagic {
			if n >= len(magic) && bytes.Equal(head[:len(magic)], magic) {
				t.Errorf("%s is an executable: build outputs are ignored (.gitignore), never committed", name)
			}
		}
	}
}

// TestNoProcessWritesItsEnvironment: no non-test code calls os.Setenv,
// os.Unsetenv or os.Clearenv. Settings are read once (internal/settings);
// make run hands what it starts to its roles layered over the environment
// (settings.Overlay), never by writing it.
func TestNoProcessWritesItsEnvironment(t *testing.T) {
	testenv.GoSources(t, root, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" {
				switch sel.Sel.Name {
				case "Setenv", "Unsetenv", "Clearenv":
					t.Errorf("%s:%d: os.%s in non-test code", rel, fset.Position(sel.Pos()).Line, sel.Sel.Name)
				}
			}
			return true
		})
	})
}
