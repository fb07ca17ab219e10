package docs

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// maxReadmeLines is how long the front page may grow.
const maxReadmeLines = 200

// pages is every Markdown file whose links are checked: the README, every
// page under docs/, and the deployment notes.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no pages under docs/")
	}
	files := append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "README.md")}, docs...)
	sort.Strings(files)
	return files
}

func TestReadmeIsAFrontPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := lineCount(string(b)); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; the front page holds at most %d: move the detail to a page under docs/", n, maxReadmeLines)
	}
}

func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// TestLinksResolve fails on any relative link, in the README or a page,
// whose file does not exist or whose #anchor names no heading there.
func TestLinksResolve(t *testing.T) {
	files := pages(t)
	broken := checkLinks(t, root, files)
	for _, b := range broken {
		t.Error(b)
	}
	if len(broken) == 0 {
		n := 0
		for _, f := range files {
			b, _ := os.ReadFile(f)
			n += len(links(string(b)))
		}
		t.Logf("%d links in %d files resolve", n, len(files))
	}
}

// TestTryItRunsAsPasted keeps the README's "Try it" block something a
// shell runs as pasted: no <placeholder> (the shell reads it as a
// redirect) and no syntax error.
func TestTryItRunsAsPasted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, ok := shellBlockUnder(string(b), "Try it")
	if !ok {
		t.Fatal(`README.md has no "## Try it" section with a sh code block`)
	}
	if m := regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_.-]*>`).FindString(block); m != "" {
		t.Errorf("README.md's Try it holds the placeholder %s, which a shell reads as a redirect: fill a variable from the API instead", m)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the block's syntax with")
	}
	cmd := exec.Command(bash, "-n")
	cmd.Stdin = strings.NewReader(block)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README.md's Try it is not valid shell: %v\n%s", err, out)
	}
}

// shellBlockUnder returns the first ```sh block in the section headed
// "## title".
func shellBlockUnder(doc, title string) (string, bool) {
	in, code := false, false
	var block strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case code && strings.HasPrefix(line, "```"):
			return block.String(), true
		case code:
			block.WriteString(line + "\n")
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == title
		case in && (line == "```sh" || line == "```bash" || line == "```shell"):
			code = true
		}
	}
	return "", false
}

// checkLinks returns a line per broken relative link in files; a link
// starting with / is relative to top, as on GitHub.
func checkLinks(t *testing.T, top string, files []string) []string {
	t.Helper()
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	var broken []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(top, file)
		for _, l := range links(string(b)) {
			target := l.target
			if isExternal(target) {
				continue
			}
			pathPart, anchor, _ := strings.Cut(target, "#")
			if p, err := url.PathUnescape(pathPart); err == nil {
				pathPart = p
			}
			dest := file
			if pathPart != "" {
				if strings.HasPrefix(pathPart, "/") {
					dest = filepath.Join(top, pathPart)
				} else {
					dest = filepath.Join(filepath.Dir(file), pathPart)
				}
			}
			dest = filepath.Clean(dest)
			shown, _ := filepath.Rel(top, dest)
			if _, err := os.Stat(dest); err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: link %q: no file %s", rel, l.line, target, shown))
				continue
			}
			if anchor == "" || !strings.HasSuffix(strings.ToLower(dest), ".md") {
				continue
			}
			a, err := anchorsOf(dest)
			if err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: link %q: %v", rel, l.line, target, err))
				continue
			}
			if !a[strings.ToLower(anchor)] {
				broken = append(broken, fmt.Sprintf("%s:%d: link %q: %s has no heading whose anchor is #%s", rel, l.line, target, shown, anchor))
			}
		}
	}
	return broken
}

func isExternal(target string) bool {
	if strings.HasPrefix(target, "//") {
		return true
	}
	scheme := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	return scheme.MatchString(target)
}

type link struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlAttr   = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*"([^"]*)"`)
)

// links returns the targets of the inline links and images, reference
// definitions and HTML href/src attributes of a Markdown document, outside
// code blocks and code spans.
func links(doc string) []link {
	var out []link
	for n, line := range strings.Split(blankCodeSpans(proseOnly(doc)), "\n") {
		for _, re := range []*regexp.Regexp{inlineLink, refDef, htmlAttr} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				target := strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">")
				if target != "" {
					out = append(out, link{line: n + 1, target: target})
				}
			}
		}
	}
	return out
}

// proseOnly returns doc with the lines of fenced and indented code blocks
// blanked, so line numbers stay those of doc.
func proseOnly(doc string) string {
	lines := strings.Split(doc, "\n")
	keep := make([]bool, len(lines))
	forEachProseLine(doc, func(n int, _ string) { keep[n-1] = true })
	for i := range lines {
		if !keep[i] {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// blankCodeSpans replaces each code span (a run of backticks up to the
// next run of the same length, within a paragraph) with spaces, keeping
// its line breaks.
func blankCodeSpans(s string) string {
	b := []byte(s)
	run := func(i int) int {
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] == '\n' && j+1 < len(b) && b[j+1] == '\n' {
				break // a paragraph ends: no closing run
			}
			if b[j] == '`' {
				m := run(j)
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// forEachProseLine calls fn with each line (numbered from 1) outside
// fenced and indented code blocks.
func forEachProseLine(doc string, fn func(n int, line string)) {
	fence := ""
	prevBlank := true
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if fence != "" {
			if indent < 4 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			prevBlank = false
			continue
		}
		if indent < 4 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			c := trimmed[:1]
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, c))]
			continue
		}
		if indent >= 4 && prevBlank && trimmed != "" {
			continue // an indented code block; list continuations follow a non-blank line
		}
		prevBlank = trimmed == ""
		fn(i+1, line)
	}
}

var (
	atxHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	setextUnder = regexp.MustCompile(`^ {0,3}(=+|-+)\s*$`)
	htmlID      = regexp.MustCompile(`(?i)<[a-z][^>]*?\s(?:id|name)\s*=\s*"([^"]+)"`)
	mdLinkText  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
)

// headingAnchors returns the anchors GitHub gives a document's headings
// (and its HTML id and name attributes), lower-cased.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	add := func(text string) {
		slug := slugify(text)
		if k := seen[slug]; k > 0 {
			seen[slug]++
			slug = slug + "-" + strconv.Itoa(k)
		} else {
			seen[slug] = 1
		}
		anchors[slug] = true
	}
	prev := ""
	forEachProseLine(doc, func(n int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			anchors[strings.ToLower(m[1])] = true
		}
		switch {
		case atxHeading.MatchString(line):
			add(atxHeading.FindStringSubmatch(line)[2])
			line = ""
		case setextUnder.MatchString(line) && strings.TrimSpace(prev) != "" &&
			!strings.HasPrefix(strings.TrimSpace(prev), "|") && !atxHeading.MatchString(prev) &&
			!strings.HasPrefix(strings.TrimSpace(prev), "- "):
			add(strings.TrimSpace(prev))
			line = ""
		}
		prev = line
	})
	return anchors
}

// slugify is GitHub's anchor for a heading's text: the rendered text,
// lower-cased, without punctuation other than '-' and '_', spaces made '-'.
func slugify(text string) string {
	text = mdLinkText.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlugify(t *testing.T) {
	for _, c := range []struct{ heading, anchor string }{
		{"Ten million attestations, and a hundred million on paper", "ten-million-attestations-and-a-hundred-million-on-paper"},
		{"Paying per request (x402)", "paying-per-request-x402"},
		{"HTTP caching and the edge", "http-caching-and-the-edge"},
		{"`make bench`", "make-bench"},
		{"What's new?", "whats-new"},
		{"a -- b", "a----b"},
		{"snake_case and CamelCase", "snake_case-and-camelcase"},
		{"Über Café", "über-café"},
		{"[The API](api.md) in *short*", "the-api-in-short"},
	} {
		if got := slugify(c.heading); got != c.anchor {
			t.Errorf("slugify(%q) = %q, want %q", c.heading, got, c.anchor)
		}
	}
}

// TestBrokenLinksAreFound runs the checker over pages with good and broken
// links, so a link that breaks fails TestLinksResolve.
func TestBrokenLinksAreFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("sub/page.md", "# Page\n\n## Scaling out\n\n## Scaling out\n\nSetext heading\n--------------\n\n<a id=\"custom\"></a>\n")
	write("LICENSE", "text\n")
	readme := write("README.md", strings.Join([]string{
		"# Top",
		"[ok](sub/page.md) [ok](sub/page.md#scaling-out) [ok](sub/page.md#scaling-out-1)",
		"[ok](sub/page.md#setext-heading) [ok](sub/page.md#custom) [ok](#top) [ok](/LICENSE)",
		"[ok](https://example.com/missing.md) ![ok](sub/page.md \"title\")",
		"`[ignored](nowhere.md)` and ``[ignored](nowhere.md)``",
		"```",
		"[ignored](nowhere.md)",
		"```",
		"[bad file](missing.md)",
		"[bad anchor](sub/page.md#scaling-out-2)",
		"[bad self](#nowhere)",
		"![bad image](img/none.png)",
		"[ref]: gone.md",
		"",
	}, "\n"))
	broken := checkLinks(t, dir, []string{readme})
	want := []string{"missing.md", "sub/page.md#scaling-out-2", "#nowhere", "img/none.png", "gone.md"}
	if len(broken) != len(want) {
		t.Fatalf("found %d broken links, want %d:\n%s", len(broken), len(want), strings.Join(broken, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(broken[i], fmt.Sprintf("%q", w)) {
			t.Errorf("broken[%d] = %s, want the link %q", i, broken[i], w)
		}
	}
}
