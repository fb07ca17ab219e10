package httpapi

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHandlersReadBodiesThroughBody keeps the class of decompression bombs
// closed: Fiber's c.Body() and the parsers built on it decode stacked
// encodings without bound, so no code outside body.go may call them.
func TestHandlersReadBodiesThroughBody(t *testing.T) {
	root := filepath.Join("..", "..") // the module
	unbounded := regexp.MustCompile(`\.(Body|BodyParser)\(\)|\.BodyParser\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "internal", "httpapi", "body.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(src), "gofiber/fiber") {
			return nil
		}
		for i, line := range strings.Split(string(src), "\n") {
			if unbounded.MatchString(line) && !strings.Contains(line, "Request().Body()") && !strings.Contains(line, "Response().Body()") {
				t.Errorf("%s:%d reads a request body without a bound; use httpapi.Body: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
