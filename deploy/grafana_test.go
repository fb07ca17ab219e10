package deploy

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// updating reports whether -update (manifests_test.go's flag, which also
// makes TestGrafanaDashboards write deploy/grafana/*.json) is set.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

type panelSource struct {
	Dashboards []struct {
		Name, Title string
		Panels      []struct{ Title, Unit, Expr string }
	}
}

func loadPanels(t *testing.T) panelSource {
	t.Helper()
	b, err := os.ReadFile("grafana/panels.yml")
	if err != nil {
		t.Fatal(err)
	}
	var src panelSource
	if err := yaml.Unmarshal(b, &src); err != nil {
		t.Fatalf("grafana/panels.yml: %v", err)
	}
	if len(src.Dashboards) != 5 {
		t.Fatalf("%d dashboards in panels.yml, want serve, index, dataset, worker and log", len(src.Dashboards))
	}
	return src
}

// dashboardJSON is one dashboard as Grafana imports it: time series
// panels two to a row, on a Prometheus data source chosen at import.
func dashboardJSON(name, title string, panels []struct{ Title, Unit, Expr string }) []byte {
	type target struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
	}
	type panel struct {
		ID          int            `json:"id"`
		Type        string         `json:"type"`
		Title       string         `json:"title"`
		Datasource  map[string]any `json:"datasource"`
		GridPos     map[string]int `json:"gridPos"`
		FieldConfig map[string]any `json:"fieldConfig"`
		Targets     []target       `json:"targets"`
	}
	ds := map[string]any{"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
	var ps []panel
	for i, p := range panels {
		ps = append(ps, panel{ID: i + 1, Type: "timeseries", Title: p.Title, Datasource: ds,
			GridPos:     map[string]int{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8},
			FieldConfig: map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
			Targets:     []target{{Expr: strings.TrimSpace(p.Expr), LegendFormat: "__auto", RefID: "A"}}})
	}
	d := map[string]any{
		"uid": "attestd-" + name, "title": title, "tags": []string{"attestd"}, "timezone": "utc",
		"schemaVersion": 39, "refresh": "30s", "time": map[string]string{"from": "now-3h", "to": "now"},
		"__inputs": []map[string]string{{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
			"pluginId": "prometheus", "pluginName": "Prometheus"}},
		"panels": ps,
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	return append(b, '\n')
}

// TestGrafanaDashboards: the committed dashboards are what panels.yml
// makes (-update writes them), each loads as JSON with its panels, every
// query parses (promtool, as recording rules), every attestd_ metric it
// names is registered by the code, and every recording rule it uses is one
// the rules file defines.
func TestGrafanaDashboards(t *testing.T) {
	src := loadPanels(t)
	known := registeredMetrics(t)
	recorded := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	metric := regexp.MustCompile(`\battestd_[a-z0-9_]+`)
	rule := regexp.MustCompile(`\battestd:[a-z0-9_:]+`)
	var check strings.Builder
	check.WriteString("groups:\n  - name: panels\n    rules:\n")
	n := 0
	for _, d := range src.Dashboards {
		want := dashboardJSON(d.Name, d.Title, d.Panels)
		path := filepath.Join("grafana", d.Name+".json")
		if updating() {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./deploy -run TestGrafanaDashboards -args -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what grafana/panels.yml makes: go test ./deploy -run TestGrafanaDashboards -args -update", path)
		}
		var loaded struct {
			UID    string
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(got, &loaded); err != nil || loaded.UID == "" || len(loaded.Panels) < 5 {
			t.Errorf("%s: does not load as a dashboard (%v, %d panels)", path, err, len(loaded.Panels))
		}
		for _, p := range d.Panels {
			n++
			fmt.Fprintf(&check, "      - record: panel_%d\n        expr: %s\n", n, strconvQuote(p.Expr))
			for _, m := range metric.FindAllString(p.Expr, -1) {
				if !known.has(m) {
					t.Errorf("%s, %q: %s is not a metric the code registers", d.Name, p.Title, m)
				}
			}
			for _, r := range rule.FindAllString(p.Expr, -1) {
				if !recorded[r] {
					t.Errorf("%s, %q: %s is not a recording rule of %s", d.Name, p.Title, r, rulesFile)
				}
			}
		}
	}
	bin := promtool(t)
	file := filepath.Join(t.TempDir(), "panels.yml")
	if err := os.WriteFile(file, []byte(check.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the panels' queries: %v\n%s", err, out)
	}
}

// strconvQuote is a YAML double-quoted scalar (JSON's quoting is one).
func strconvQuote(s string) string {
	b, _ := json.Marshal(strings.TrimSpace(s))
	return string(b)
}
