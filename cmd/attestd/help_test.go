package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attestd/attestd/internal/testing/allvars"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// envName is a variable's name in help text.
var envName = regexp.MustCompile(`\b(?:ATTESTD_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL|DATABASE_READ_URLS|REDIS_URL|OTEL_[A-Z0-9_]*[A-Z0-9])\b`)

// TestHelpFitsAndNamesCurrentVariables: every help page (attestd help, each
// command's, each subcommand's) fits the width it is given (COLUMNS, or 80
// when standard output is not a terminal), and every variable it names is
// one the code reads (a package's Vars) and docs/configuration.md
// documents as current: none removed (ATTESTD_WEB_DOMAIN).
func TestHelpFitsAndNamesCurrentVariables(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	documented := configRows(t)
	read := allvars.Names()
	pages := [][]string{{"help"}}
	for _, c := range commands {
		pages = append(pages, []string{"help", c.name})
	}
	for _, sub := range [][]string{{"keys", "create"}, {"keys", "list"}, {"log", "keygen"}, {"log", "hold"},
		{"payments", "list"}, {"payments", "receipt"}, {"accounts", "link-wallet"}} {
		pages = append(pages, append(sub, "--help"))
	}
	for _, width := range []int{0, 72, 100} {
		env, want := []string{fmt.Sprintf("COLUMNS=%d", width)}, width
		if width == 0 {
			env, want = nil, 80
		}
		for _, args := range pages {
			out, errOut, code := runCLI(t, bin, "", env, args...)
			page := fmt.Sprintf("attestd %s (width %d)", strings.Join(args, " "), want)
			if code != 0 || out == "" {
				t.Errorf("%s: exit %d, %d bytes\n%s", page, code, len(out), errOut)
				continue
			}
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > want {
					t.Errorf("%s: line %d is %d columns wide:\n%s", page, i+1, n, line)
				}
			}
			for _, name := range envName.FindAllString(out, -1) {
				def, ok := documented[name]
				switch {
				case !ok:
					t.Errorf("%s names %s, which docs/configuration.md does not document", page, name)
				case def == "(removed)":
					t.Errorf("%s names %s, which docs/configuration.md says was removed", page, name)
				case !read[name]:
					t.Errorf("%s names %s, which no package's Vars lists", page, name)
				}
			}
		}
	}
}

// TestHelpLayout: help wraps prose at word boundaries, keeps a usage
// text's layout when it fits, continues a long example command with
// " \" outside quotes (so it still runs when pasted), and gives a flag's
// default once: never "(default: all of them) (default -1)".
func TestHelpLayout(t *testing.T) {
	if got := wrapWords("aa bb cc dd", 8, 2, 4); got != "  aa bb\n    cc\n    dd" {
		t.Errorf("wrapWords: %q", got)
	}
	if got := wrapWords("abcdefghij", 6, 0, 0); got != "abcdef\nghij" {
		t.Errorf("wrapWords of a word longer than a line: %q", got)
	}
	usage := "usage:\n  attestd x A   does a thing"
	if got := reflow(usage, 80); got != usage {
		t.Errorf("reflow changed a usage that fits:\n%s", got)
	}
	if got := reflow(usage, 20); got != "usage:\n  attestd x A\n      does a thing" {
		t.Errorf("reflow at 20:\n%s", got)
	}
	cmd := wrapCommand("A='x y z' attestd run --flag value   # a comment", 24, 2)
	if cmd != "  # a comment\n  A='x y z' attestd \\\n      run --flag value" {
		t.Errorf("wrapCommand:\n%s", cmd)
	}
	var quorumHelp string
	bin := testenv.BuildAttestd(t)
	out, _, _ := runCLI(t, bin, "", nil, "verify", "--help")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "must have cosigned") {
			quorumHelp = line
		}
	}
	if !strings.Contains(quorumHelp, "(default: all of them)") || strings.Contains(out, "(default -1)") {
		t.Errorf("verify --help gives --quorum's default as %q:\n%s", quorumHelp, out)
	}
	if !strings.Contains(out, `(default 30s)`) {
		t.Errorf("verify --help lost --timeout's default:\n%s", out)
	}
}

// configRows reads docs/configuration.md's variable rows: name -> default
// cell (backticks removed).
func configRows(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/configuration.md")
	testenv.Must(t, err, "read docs/configuration.md")
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.ReplaceAll(strings.TrimSpace(cells[2]), "`", "")
	}
	return rows
}
