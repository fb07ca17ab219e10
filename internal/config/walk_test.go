package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// walkGo calls fn with the path and text of every non-test .go file under
// root, skipping hidden directories.
func walkGo(root string, fn func(path, src string)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, string(b))
		return nil
	})
}
