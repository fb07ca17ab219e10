package testenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// GoSources parses every non-test Go file of the tree at root (leaving out
// hidden directories, testdata, node_modules and bin) and hands each to
// visit with its path relative to root: for the tests that hold the
// repository to a rule (no os.Setenv, the race list, registered metrics).
func GoSources(tb testing.TB, root string, visit func(rel string, fset *token.FileSet, f *ast.File)) {
	tb.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		visit(filepath.ToSlash(rel), fset, f)
		return nil
	})
	if err != nil {
		tb.Fatalf("read the Go sources under %s: %v", root, err)
	}
}

// ConnCounter is a loopback listener that accepts and closes connections,
// counting them: point every store, chain and upstream URL of a test at it
// to show that something dialled nothing. It closes when the test ends.
func ConnCounter(tb testing.TB) (addr string, dialled *atomic.Int64) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Must(tb, err, "listen")
	tb.Cleanup(func() { ln.Close() })
	dialled = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), dialled
}
