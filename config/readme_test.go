package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/attestd/attestd/config"
	"github.com/attestd/attestd/indexer"
)

// TestReadmeDocumentsEveryVariable keeps the README's configuration table
// true: every variable the code lists, and every ATTESTD_ name read
// anywhere in the code, has a row.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := func(name string) bool { return strings.Contains(string(readme), "| `"+name+"` |") }
	var names []string
	for _, v := range config.Vars {
		names = append(names, v.Name)
	}
	for _, v := range indexer.Vars {
		names = append(names, v.Name)
	}
	// Every ATTESTD_ variable named in non-test Go code.
	re := regexp.MustCompile(`"(ATTESTD_[A-Z0-9_]+)"`)
	err = walkGo("..", func(src string) {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			names = append(names, m[1])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !documented(n) {
			t.Errorf("README.md has no configuration row for %s", n)
		}
	}
}
