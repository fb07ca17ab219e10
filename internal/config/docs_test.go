package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/allvars"
)

// everyVar is every package's list of the variables it reads.
var everyVar = allvars.Lists()

// configDoc is the page whose tables document every variable.
const configDoc = "docs/configuration.md"

// TestDocsDocumentEveryVariable keeps the configuration tables of
// docs/configuration.md true: every listed variable has a row whose default
// is the listed one, and every ATTESTD_ name in the code is listed by some
// package.
func TestDocsDocumentEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../" + configDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // name -> default cell, backticks removed
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[name] = strings.ReplaceAll(strings.TrimSpace(cells[2]), "`", "")
	}
	listed := map[string]bool{}
	for _, vars := range everyVar {
		for _, v := range vars {
			listed[v.Name] = true
			def, ok := rows[v.Name]
			switch {
			case !ok:
				t.Errorf("%s has no configuration row for %s", configDoc, v.Name)
			case def != v.Default:
				t.Errorf("%s gives %s the default %q; the code says %q", configDoc, v.Name, def, v.Default)
			}
		}
	}
	re := regexp.MustCompile(`"(ATTESTD_[A-Z0-9_]+)"`)
	err = walkGo("../..", func(path, src string) {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			if !listed[m[1]] {
				t.Errorf("%s reads %s, which no package lists in its Vars", path, m[1])
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
