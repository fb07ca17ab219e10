package deploy

import (
	"go/ast"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
	"go.yaml.in/yaml/v3"
)

const rulesFile = "prometheus/attestd-rules.yml"

// promtool finds promtool (the Debian package prometheus), installing it
// when missing and root; the test is skipped, saying why, otherwise.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Geteuid() == 0 {
		if err := devstack.AptInstall("prometheus"); err == nil {
			if p, err := exec.LookPath("promtool"); err == nil {
				return p
			}
		}
	}
	t.Skip("promtool (the Debian package prometheus) is not installed, and this account cannot install it")
	return ""
}

// TestPrometheusRules: the rules load (promtool check rules), and every
// alert fires on the series its unit test feeds it and stays quiet on the
// others (promtool test rules, deploy/prometheus/tests).
func TestPrometheusRules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", "prometheus/tests/attestd-rules-test.yml"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert, Record, Expr, For string
			Labels, Annotations      map[string]string
		}
	}
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// TestEveryAlertIsTestedAndDescribed: each alert has a severity, a summary
// naming the attestd process, a runbook section in docs/operations.md
// (and each section there an alert), and a unit test.
func TestEveryAlertIsTestedAndDescribed(t *testing.T) {
	rf := loadRules(t)
	tests, err := os.ReadFile("prometheus/tests/attestd-rules-test.yml")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	inAlerts := false
	for _, line := range strings.Split(string(ops), "\n") {
		if strings.HasPrefix(line, "## ") {
			inAlerts = line == "## Alerts"
		}
		if inAlerts && strings.HasPrefix(line, "### ") {
			sections[strings.TrimPrefix(line, "### ")] = true
		}
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			if !regexp.MustCompile(`attestd (serve|index|worker|dataset|\{\{ \$labels\.job \}\})`).MatchString(r.Annotations["summary"]) &&
				!strings.Contains(r.Annotations["summary"], "attestd index") {
				t.Errorf("%s: the summary %q does not name the process", r.Alert, r.Annotations["summary"])
			}
			if want := "docs/operations.md#" + strings.ToLower(r.Alert); r.Annotations["runbook"] != want {
				t.Errorf("%s: runbook %q, want %q", r.Alert, r.Annotations["runbook"], want)
			}
			if !sections[r.Alert] {
				t.Errorf("%s: no section ### %s under ## Alerts in docs/operations.md", r.Alert, r.Alert)
			}
			if !strings.Contains(string(tests), "alertname: "+r.Alert+",") && !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("%s: no unit test in prometheus/tests", r.Alert)
			}
		}
	}
	for s := range sections {
		if !alerts[s] {
			t.Errorf("docs/operations.md describes %s, which no rule defines", s)
		}
	}
	if len(alerts) < 20 {
		t.Fatalf("%d alerts", len(alerts))
	}
}

// TestEveryRuleMetricExists: every attestd_ metric a rule names is one the
// code registers, so a renamed metric fails here rather than silencing its
// alert.
func TestEveryRuleMetricExists(t *testing.T) {
	known := registeredMetrics(t)
	rf := loadRules(t)
	name := regexp.MustCompile(`\battestd_[a-z0-9_]+`)
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			for _, m := range name.FindAllString(r.Expr, -1) {
				n++
				if !known.has(m) {
					t.Errorf("%s%s names %s, which no code registers", r.Alert, r.Record, m)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d metric names found in the rules", n)
	}
}

// metricSet is the metric names the code registers.
type metricSet map[string]bool

// has says whether m is a registered metric, or one of the series a
// registered histogram exposes (its _bucket, _count and _sum).
func (ms metricSet) has(m string) bool {
	if ms[m] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if b, ok := strings.CutSuffix(m, suffix); ok && ms[b] {
			return true
		}
	}
	return false
}

// registeredMetrics reads the metric names the non-test code registers:
// the Name of every prometheus *Opts literal and NewDesc, joined with its
// Namespace and Subsystem where those are constants of the function, and
// the names passed to a package's small constructors (webhook's c, g, gp).
func registeredMetrics(t *testing.T) metricSet {
	t.Helper()
	known := metricSet{}
	metricName := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	testenv.GoSources(t, "..", func(rel string, _ *token.FileSet, f *ast.File) {
		if strings.HasPrefix(rel, "bench/") {
			return // load generators register nothing a process exports
		}
		consts := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok {
							consts[id.Name] = s
						}
					}
				}
			}
			return true
		})
		value := func(e ast.Expr) (string, bool) {
			if s, ok := stringLit(e); ok {
				return s, true
			}
			if id, ok := e.(*ast.Ident); ok {
				s, ok := consts[id.Name]
				return s, ok
			}
			return "", false
		}
		var prefix string // Namespace_Subsystem_ of the Opts built with a name parameter
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
					return true
				}
				var parts [3]string
				named := false
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, _ := kv.Key.(*ast.Ident)
					if key == nil {
						continue
					}
					v, ok := value(kv.Value)
					switch key.Name {
					case "Namespace":
						parts[0] = v
					case "Subsystem":
						parts[1] = v
					case "Name":
						parts[2], named = v, ok
					}
				}
				join := func(name string) string {
					var out []string
					for _, p := range []string{parts[0], parts[1], name} {
						if p != "" {
							out = append(out, p)
						}
					}
					return strings.Join(out, "_")
				}
				if named && parts[2] != "" {
					known[join(parts[2])] = true
				} else if parts[0] != "" {
					prefix = join("") + "_"
				}
			case *ast.CallExpr:
				// prometheus.NewDesc("name", ...), and a package's small
				// constructors c("name", "help") after an Opts built from a
				// name parameter.
				if len(n.Args) == 0 {
					return true
				}
				s, ok := stringLit(n.Args[0])
				if !ok || !metricName.MatchString(s) {
					return true
				}
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewDesc" {
					known[s] = true
				} else if id, ok := n.Fun.(*ast.Ident); ok && prefix != "" && len(id.Name) <= 3 && len(n.Args) == 2 {
					known[prefix+s] = true
				}
			}
			return true
		})
	})
	if len(known) < 60 {
		names := make([]string, 0, len(known))
		for k := range known {
			names = append(names, k)
		}
		sort.Strings(names)
		t.Fatalf("found only %d registered metrics: %v", len(known), names)
	}
	return known
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}
