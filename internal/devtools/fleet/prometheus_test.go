package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

func TestScaleRuleTimes(t *testing.T) {
	in := `      - alert: A
        expr: changes(x[2m]) == 0 and rate(y[5m]) > 0 and z[30s]
        for: 1m
      - alert: B
        expr: up == 0
        for: 10m
      - record: r
        expr: sum(rate(c[1h]))
`
	for _, c := range []struct {
		scale int
		want  string
	}{
		{1, in},
		{12, `      - alert: A
        expr: changes(x[10s]) == 0 and rate(y[25s]) > 0 and z[3s]
        for: 5s
      - alert: B
        expr: up == 0
        for: 50s
      - record: r
        expr: sum(rate(c[300s]))
`},
		{1000, `      - alert: A
        expr: changes(x[1s]) == 0 and rate(y[1s]) > 0 and z[1s]
        for: 1s
      - alert: B
        expr: up == 0
        for: 1s
      - record: r
        expr: sum(rate(c[4s]))
`},
	} {
		if got := string(ScaleRuleTimes([]byte(in), c.scale)); got != c.want {
			t.Errorf("scale %d:\n%s\nwant\n%s", c.scale, got, c.want)
		}
	}
}

// readTargets is a role's file_sd targets file, as "name=addr" entries
// (each labelled with its role, which must be role).
func readTargets(t *testing.T, dir, role string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, role+".json"))
	testenv.Must(t, err, "read the %s targets", role)
	var groups []promTargetGroup
	testenv.Must(t, json.Unmarshal(b, &groups), "parse the %s targets: %s", role, b)
	out := []string{}
	for _, g := range groups {
		if g.Labels["role"] != role || len(g.Targets) != 1 {
			t.Fatalf("%s targets: group %+v; want one target labelled role=%s", role, g, role)
		}
		out = append(out, g.Labels["name"]+"="+g.Targets[0])
	}
	return out
}

// TestPrometheusTargetsFollowTheFleet: the targets files name every
// member's current metrics address, through each step of a process's
// life, and leave no temporary file behind.
func TestPrometheusTargetsFollowTheFleet(t *testing.T) {
	dir := t.TempDir()
	f := &Fleet{opt: Options{}.withDefaults(), targetsDir: dir}
	proc := func(role, name, addr string) *Proc {
		return &Proc{Name: name, Role: role, MetricsAddr: addr, changed: f.targetsChanged}
	}
	f.Serve = []*Proc{proc("serve", "serve-1", "127.0.0.1:9001"), proc("serve", "serve-2", "127.0.0.1:9002")}
	f.Index = []*Proc{proc("index", "index-1", "127.0.0.1:9101")}
	f.Worker = []*Proc{proc("worker", "worker-1", "127.0.0.1:9201")}
	testenv.Must(t, f.writeTargets(), "write the targets")
	for _, step := range []struct {
		name                 string
		do                   func()
		serve, index, worker []string
	}{
		{"at start, every process", func() {},
			[]string{"serve-1=127.0.0.1:9001", "serve-2=127.0.0.1:9002"}, []string{"index-1=127.0.0.1:9101"}, []string{"worker-1=127.0.0.1:9201"}},
		{"a killed process stays (its up is 0)", f.Index[0].Kill,
			[]string{"serve-1=127.0.0.1:9001", "serve-2=127.0.0.1:9002"}, []string{"index-1=127.0.0.1:9101"}, []string{"worker-1=127.0.0.1:9201"}},
		{"a stopped process leaves", f.Worker[0].Stop,
			[]string{"serve-1=127.0.0.1:9001", "serve-2=127.0.0.1:9002"}, []string{"index-1=127.0.0.1:9101"}, []string{}},
		{"a node on a new metrics port is followed", func() {
			f.Serve[1].MetricsAddr = "127.0.0.1:9012" // what Replace does, then notifies
			f.Serve[1].notify()
		}, []string{"serve-1=127.0.0.1:9001", "serve-2=127.0.0.1:9012"}, []string{"index-1=127.0.0.1:9101"}, []string{}},
		{"a stopped serve node leaves its job only", f.Serve[0].Stop,
			[]string{"serve-2=127.0.0.1:9012"}, []string{"index-1=127.0.0.1:9101"}, []string{}},
	} {
		step.do()
		for role, want := range map[string][]string{"serve": step.serve, "index": step.index, "worker": step.worker} {
			if got := readTargets(t, dir, role); !slices.Equal(got, want) {
				t.Errorf("%s: %s targets %q, want %q", step.name, role, got, want)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	testenv.Must(t, err, "list the targets")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"dataset.json", "index.json", "serve.json", "worker.json"}) {
		t.Errorf("targets directory holds %q; want only the four roles' files", names)
	}
	conf := string(promConfig(time.Second))
	if strings.Contains(conf, "static_configs") || !strings.Contains(conf,
		"  - job_name: attestd-serve\n    file_sd_configs: [{files: [targets/serve.json], refresh_interval: 1s}]\n") {
		t.Errorf("prometheus.yml:\n%s", conf)
	}
}

// promTarget is one active target as Prometheus's /api/v1/targets lists it.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

// promGet decodes the data of a Prometheus API answer into data.
func promGet(ctx context.Context, base, path string, data any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer res.Body.Close()
	body := struct {
		Status string
		Data   any
	}{Data: data}
	if err := json.NewDecoder(http.MaxBytesReader(nil, res.Body, 8<<20)).Decode(&body); err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("prometheus %s: status %q", path, body.Status)
	}
	return nil
}

// waitScraped waits until Prometheus's active targets of job are exactly
// procs at their metrics addresses now, each scraped (health up) and
// labelled with its role and name, and up{job} has one series per
// process, each 1 (a replaced node's old series went stale when its
// target left).
func waitScraped(t *testing.T, ctx context.Context, f *Fleet, job string, procs ...*Proc) {
	t.Helper()
	want := map[string]*Proc{}
	for _, p := range procs {
		want["http://"+p.MetricsAddr+"/metrics"] = p
	}
	testenv.WaitForState(t, job+" targets: "+strings.Join(slices.Sorted(maps.Keys(want)), ", "), 60*time.Second, func() (bool, string) {
		var data struct{ ActiveTargets []promTarget }
		if err := promGet(ctx, f.Prometheus.URL, "/api/v1/targets?state=active", &data); err != nil {
			return false, err.Error()
		}
		var got []promTarget
		for _, tg := range data.ActiveTargets {
			if tg.Labels["job"] == job {
				got = append(got, tg)
			}
		}
		ok := len(got) == len(want)
		for _, tg := range got {
			p := want[tg.ScrapeURL]
			ok = ok && p != nil && tg.Health == "up" && tg.Labels["role"] == p.Role && tg.Labels["name"] == p.Name &&
				tg.Labels["instance"] == p.MetricsAddr
		}
		return ok, fmt.Sprintf("%+v", got)
	})
	q := "/api/v1/query?query=" + url.QueryEscape(`up{job="`+job+`"}`)
	testenv.WaitForState(t, "up{job="+job+"} only for the processes now", 60*time.Second, func() (bool, string) {
		var data struct {
			Result []struct {
				Metric map[string]string
				Value  []any
			}
		}
		if err := promGet(ctx, f.Prometheus.URL, q, &data); err != nil {
			return false, err.Error()
		}
		ok := len(data.Result) == len(procs)
		for _, r := range data.Result {
			ok = ok && want["http://"+r.Metric["instance"]+"/metrics"] != nil && len(r.Value) == 2 && r.Value[1] == "1"
		}
		return ok, fmt.Sprintf("%+v", data.Result)
	})
}
