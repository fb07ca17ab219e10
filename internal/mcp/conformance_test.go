package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/mcp"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// conformanceDir holds the pinned suite (package.json, package-lock.json)
// and a baseline of expected failures per protocol revision.
var conformanceDir = filepath.Join("testdata", "conformance")

// conformanceRunTimeout bounds one run of the suite: a run takes a few
// seconds; the bound is for a loaded make test, and for a server that
// stops answering.
const conformanceRunTimeout = 2 * time.Minute

// conformanceMusts are checks every run must have run and passed, so that
// a run cannot pass vacuously (a scenario the suite skipped, a baseline
// that swallowed everything): the tool list is ours, and a request for
// another Host and Origin is refused (DNS rebinding) while one for the
// node's own is served. Detail, when set, is a field of the check's
// details that must hold want (as JSON).
var conformanceMusts = []struct {
	scenario, check, detail, want string
}{
	{"tools-list", "tools-list", "toolCount", strconv.Itoa(len(mcp.ToolNames()))},
	{"dns-rebinding-protection", "localhost-host-rebinding-rejected", "statusCode", "403"},
	{"dns-rebinding-protection", "localhost-host-valid-accepted", "statusCode", "200"},
}

// TestConformance runs the official MCP conformance suite against a
// node's /mcp: the scenarios protocol revisions 2025-11-25 and 2026-07-28
// require, each with its baseline (testdata/conformance/baseline-*.yml).
// The suite fails a run on a failure the baseline does not expect and on
// a baseline entry that passes, so the baselines stay exact.
func TestConformance(t *testing.T) {
	t.Parallel()
	modules := testenv.NodeModules(t, conformanceDir)
	node := conformanceNode(t, modules)
	f := newFixture(t, 5)
	_, endpoint := f.remoteNode(t, 0)
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			t.Parallel()
			run := runConformance(t, node, modules, endpoint, revision)
			for _, m := range conformanceMusts {
				if err := run.passed(m.scenario, m.check, m.detail, m.want); err != nil {
					t.Errorf("%s: %v", revision, err)
				}
			}
		})
	}
}

// conformanceNode is the Node.js 22 package.json pins: the suite does not
// start on older ones (it imports fs.globSync), and the machine's may be
// one. Its binary comes from the node package's install script.
func conformanceNode(t *testing.T, modules string) string {
	t.Helper()
	node := filepath.Join(modules, ".bin", "node")
	out, err := exec.Command(node, "--version").Output()
	if v := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(v, "v22.") {
		t.Fatalf("%s is %q (%v), not the Node.js 22 %s/package.json pins: did npm skip the node package's install script?",
			node, v, err, conformanceDir)
	}
	return node
}

// conformanceCheck is one check of a scenario, as the suite writes it in
// the scenario's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// conformanceRun is what one run of the suite reported: its output, ANSI
// colours removed, and the checks of each scenario it ran.
type conformanceRun struct {
	output string
	checks map[string][]conformanceCheck
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// runConformance runs the scenarios revision requires against endpoint,
// with the revision's baseline, and fails the test, with the suite's
// summary and the unexpected failures' messages, if the suite does.
func runConformance(t *testing.T, node, modules, endpoint, revision string) *conformanceRun {
	t.Helper()
	baseline, err := filepath.Abs(filepath.Join(conformanceDir, "baseline-"+revision+".yml"))
	testenv.Must(t, err, "baseline path")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), conformanceRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", endpoint, "--requirements", revision, "--expected-failures", baseline,
		"-o", out, "--timeout", "15000")
	cmd.Dir = out
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	run := &conformanceRun{output: ansiEscape.ReplaceAllString(buf.String(), ""), checks: readConformanceChecks(t, out)}
	if runErr != nil {
		if ctx.Err() != nil {
			runErr = fmt.Errorf("%w (%v)", runErr, ctx.Err())
		}
		t.Errorf("conformance suite, requirements %s, baseline %s: %v\n%s%s",
			revision, filepath.Base(baseline), runErr, run.summary(), run.unexpected())
	}
	return run
}

var scenarioDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// readConformanceChecks reads the checks.json the suite wrote for each
// scenario into out (-o): out/server-<scenario>-<time>/checks.json.
func readConformanceChecks(t *testing.T, out string) map[string][]conformanceCheck {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	testenv.Must(t, err, "list checks.json")
	checks := make(map[string][]conformanceCheck, len(files))
	for _, file := range files {
		m := scenarioDir.FindStringSubmatch(filepath.Base(filepath.Dir(file)))
		if m == nil {
			t.Fatalf("%s: not in a server-<scenario>-<time> directory", file)
		}
		b, err := os.ReadFile(file)
		testenv.Must(t, err, "read %s", file)
		var cs []conformanceCheck
		testenv.Must(t, json.Unmarshal(b, &cs), "decode %s", file)
		checks[m[1]] = cs
	}
	return checks
}

// passed says why check of scenario did not run and pass (nil: it did,
// every time it was made), and whether its details' field detail holds
// want (as JSON) when detail is set.
func (r *conformanceRun) passed(scenario, check, detail, want string) error {
	cs, ok := r.checks[scenario]
	if !ok {
		return fmt.Errorf("scenario %s did not run (no checks.json)", scenario)
	}
	seen := false
	for _, c := range cs {
		if c.ID != check {
			continue
		}
		seen = true
		if c.Status != "SUCCESS" {
			return fmt.Errorf("%s: check %s: %s: %s %.300s", scenario, check, c.Status, c.ErrorMessage, compactJSON(c.Details))
		}
		if detail == "" {
			continue
		}
		var d map[string]json.RawMessage
		if err := json.Unmarshal(c.Details, &d); err != nil || string(d[detail]) != want {
			return fmt.Errorf("%s: check %s: details.%s is %s, want %s (%.300s)", scenario, check, detail, d[detail], want, compactJSON(c.Details))
		}
	}
	if !seen {
		return fmt.Errorf("%s: check %s was not made", scenario, check)
	}
	return nil
}

// summary is the end of the suite's summary: what the baseline had that
// passed (stale), what failed that it did not have (unexpected), and its
// verdict. Its counts, per scenario and in total, count the baseline's
// failures and the unscored scenarios' too, and its list of expected
// failures is the same from run to run: both are left out. When the
// suite stopped before its summary: the output's end.
func (r *conformanceRun) summary() string {
	i := strings.Index(r.output, "\nTotal: ")
	if i < 0 {
		lines := strings.Split(strings.TrimRight(r.output, "\n"), "\n")
		return "(no summary; the output's end:)\n" + strings.Join(lines[max(0, len(lines)-60):], "\n") + "\n"
	}
	var b strings.Builder
	expected := 0
	for line := range strings.Lines(r.output[i+1:]) {
		switch {
		case strings.HasPrefix(line, "Total: "), strings.HasPrefix(line, "Expected failures (in baseline)"),
			strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "  ~ "):
			expected++
		default:
			b.WriteString(line)
		}
	}
	return fmt.Sprintf("%s(and %d failing checks the baseline expects)\n", b.String(), expected)
}

// unexpected lists the checks behind the summary's unexpected failures
// ("scenario" for a scenario the baseline does not name, "scenario:check"
// for one it names checks of), with their messages.
func (r *conformanceRun) unexpected() string {
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(r.output))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Unexpected failures (not in baseline)"):
			in = true
			b.WriteString("failing checks not in the baseline:\n")
		case in && strings.HasPrefix(line, "  ✗ "):
			scenario, check, _ := strings.Cut(strings.TrimPrefix(line, "  ✗ "), ":")
			for _, c := range r.checks[scenario] {
				if (c.Status == "FAILURE" || c.Status == "WARNING") && (check == "" || c.ID == check) {
					fmt.Fprintf(&b, "  %s:%s %s: %s\n", scenario, c.ID, c.Status,
						strings.TrimSpace(fmt.Sprintf("%s %.300s", c.ErrorMessage, compactJSON(c.Details))))
				}
			}
		default:
			in = false
		}
	}
	return b.String()
}

// compactJSON is raw on one line ("" for none).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
