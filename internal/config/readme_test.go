package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/attestd/attestd/apikey"
	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/purge"
	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/mcp"
	"github.com/attestd/attestd/premium"
	"github.com/attestd/attestd/ratelimit"
	"github.com/attestd/attestd/store"
	"github.com/attestd/attestd/web"
	"github.com/attestd/attestd/webhook"
	"github.com/attestd/attestd/x402/verifier"
)

// everyVar is every package's list of the variables it reads.
var everyVar = [][]config.Var{
	config.Vars, store.Vars, httpcache.Vars, purge.Vars, ratelimit.Vars, apikey.Vars, premium.Vars, indexer.Vars, mcp.Vars, testenv.Vars, verifier.Vars, webhook.Vars, web.Vars,
}

// TestReadmeDocumentsEveryVariable keeps the README's configuration tables
// true: every listed variable has a row whose default is the listed one,
// and every ATTESTD_ name in the code is listed by some package.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
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
				t.Errorf("README.md has no configuration row for %s", v.Name)
			case def != v.Default:
				t.Errorf("README.md gives %s the default %q; the code says %q", v.Name, def, v.Default)
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
