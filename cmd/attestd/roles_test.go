package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// devTrees are the folders whose packages the binary carries for
// development only (internal/devtools: make run's and the tests' stores,
// installed from Debian packages when missing, the chain simulator, demo
// data, the witness it starts, the fleet) or never carries at all (the
// test support of internal/testing and the benchmarks' harnesses).
var devTrees = []string{modulePath + "/internal/devtools/", modulePath + "/internal/testing/", modulePath + "/bench/"}

// isDevTool says whether an import path lies in one of the devTrees.
func isDevTool(path string) bool {
	for _, tree := range devTrees {
		if strings.HasPrefix(path, tree) {
			return true
		}
	}
	return false
}

// productionRoles are the commands a production deployment runs.
var productionRoles = []string{"runServe", "runIndex", "runWorker", "runMCP", "runMigrate", "runHealthcheck"}

// TestProductionRolesReachNoDevTools: the production commands (serve,
// index, worker, mcp, migrate, healthcheck), with the dispatch and
// signal handling every command goes through, reach none of the dev tools
// at run time. The test walks the calls from those commands through this
// package's functions and methods, collects the packages they use, and
// lists what those import in turn (go list -deps): no dev tool may be
// among them. The same walk from `local` must reach the dev tools, so the
// walk itself is shown to see them. Constants are not followed (a
// constant runs no code), and the dev tools have no init functions, so
// carrying them in the binary runs none of their code.
func TestProductionRolesReachNoDevTools(t *testing.T) {
	g := parseCommand(t)
	roots := append([]string{"main", "run", "signalContext"}, productionRoles...)
	used := g.reach(roots)
	deps := goListDeps(t, used)
	for _, d := range deps {
		if isDevTool(d) {
			t.Errorf("a production command reaches %s (through the packages %v)", d, used)
		}
	}
	if !slices.Contains(used, modulePath+"/internal/node") {
		t.Errorf("the production commands do not reach node (reached %v): the walk misses calls", used)
	}
	t.Logf("production commands use %d packages, %d with their imports", len(used), len(deps))

	binary := goListDeps(t, []string{"."})
	for _, pkg := range binary {
		if !isDevTool(pkg) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", strings.TrimPrefix(pkg, modulePath+"/"), "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
					t.Errorf("%s has an init function: every command, production ones too, would run it", name)
				}
			}
		}
	}

	local := goListDeps(t, g.reach([]string{"runLocal"}))
	if !slices.Contains(local, modulePath+"/internal/devtools/devstack") || !slices.Contains(local, modulePath+"/internal/devtools/devnet") {
		t.Errorf("the walk from runLocal does not reach devstack and devnet: it cannot see a dev tool (reached %v)", local)
	}
}

const modulePath = "github.com/attestd/attestd"

// callGraph is this package's top-level functions, methods and variables,
// with the package names each file imports.
type callGraph struct {
	funcs   map[string]*ast.FuncDecl   // functions by name
	methods map[string][]*ast.FuncDecl // methods by method name (any receiver)
	vars    map[string]ast.Node        // package-level variables: their declarations
	imports map[*ast.File]map[string]string
	fileOf  map[ast.Node]*ast.File
	names   map[string]string // import path -> package name
}

func parseCommand(t *testing.T) *callGraph {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	g := &callGraph{funcs: map[string]*ast.FuncDecl{}, methods: map[string][]*ast.FuncDecl{}, vars: map[string]ast.Node{},
		imports: map[*ast.File]map[string]string{}, fileOf: map[ast.Node]*ast.File{}}
	var paths []string
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			paths = append(paths, p)
		}
	}
	g.names = packageNames(t, paths)
	for _, f := range parsed {
		byName := map[string]string{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			n := g.names[p]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			byName[n] = p
		}
		g.imports[f] = byName
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				g.fileOf[d] = f
				if d.Recv != nil {
					g.methods[d.Name.Name] = append(g.methods[d.Name.Name], d)
				} else {
					g.funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						g.vars[n.Name] = spec
						g.fileOf[spec] = f
					}
				}
			}
		}
	}
	return g
}

// reach walks from the named functions through every function, method
// (by name, whatever its receiver: an over-approximation) and package
// variable they mention, and returns the import paths used on the way.
func (g *callGraph) reach(roots []string) []string {
	seen := map[ast.Node]bool{}
	used := map[string]bool{}
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		imports := g.imports[g.fileOf[n]]
		ast.Inspect(n, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if p, ok := imports[id.Name]; ok {
						used[p] = true
					}
				}
				for _, m := range g.methods[x.Sel.Name] {
					visit(m)
				}
			case *ast.Ident:
				if f, ok := g.funcs[x.Name]; ok {
					visit(f)
				}
				if v, ok := g.vars[x.Name]; ok {
					visit(v)
				}
			}
			return true
		})
	}
	for _, r := range roots {
		visit(g.funcs[r])
	}
	var out []string
	for p := range used {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// packageNames asks go list for the package name of each import path.
func packageNames(t *testing.T, paths []string) map[string]string {
	t.Helper()
	slices.Sort(paths)
	paths = slices.Compact(paths)
	out := goList(t, append([]string{"-f", "{{.ImportPath}} {{.Name}}"}, paths...))
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if p, n, ok := strings.Cut(line, " "); ok {
			names[p] = n
		}
	}
	return names
}

// goListDeps is every package pkgs import, directly or not, themselves included.
func goListDeps(t *testing.T, pkgs []string) []string {
	t.Helper()
	if len(pkgs) == 0 {
		return nil
	}
	return strings.Fields(goList(t, append([]string{"-deps"}, pkgs...)))
}

func goList(t *testing.T, args []string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v %s", args, err, msg)
	}
	return string(out)
}
