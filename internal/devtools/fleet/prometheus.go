package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

// promJobs are the fleet's scrape jobs, one per role (as
// docs/operations.md's Alerts asks), each with its file of targets under
// the Prometheus directory's targets/.
var promJobs = []struct{ role, job string }{{"serve", "attestd-serve"}, {"index", "attestd-index"}, {"worker", "attestd-worker"}, {"dataset", "attestd-dataset"}}

// startPrometheus runs Prometheus scraping every attestd process by role
// (jobs attestd-serve, attestd-index, attestd-worker) with the fleet's
// rules loaded. Its targets come from file service discovery: one JSON
// file per role (targets/serve.json ...), written now and rewritten
// whenever a process starts, stops or is replaced (writeTargets), so a
// node replaced on a new metrics port (Proc.Replace) is followed.
func (f *Fleet) startPrometheus(ctx context.Context) error {
	rules, err := os.ReadFile(f.opt.RulesFile)
	if err != nil {
		return fmt.Errorf("prometheus rules: %w", err)
	}
	scale := f.opt.AlertTimeScale
	if scale < 1 {
		scale = 1
	}
	interval := time.Duration(float64(5*time.Second) / float64(scale))
	if interval < time.Second {
		interval = time.Second
	}
	dir := filepath.Join(f.opt.Dir, "prometheus")
	targets := filepath.Join(dir, "targets")
	if err := os.MkdirAll(targets, 0o755); err != nil {
		return fmt.Errorf("prometheus targets: %w", err)
	}
	f.targetsMu.Lock()
	f.targetsDir = targets
	f.targetsMu.Unlock()
	if err := f.writeTargets(); err != nil {
		return err
	}
	p, err := devstack.StartPrometheus(ctx, dir, devstack.PrometheusOptions{
		Config: promConfig(interval), Files: map[string][]byte{"attestd-rules.yml": ScaleRuleTimes(rules, scale)}})
	if err != nil {
		return err
	}
	f.Prometheus = p
	f.closers = append(f.closers, func() {
		p.Stop()
		f.targetsMu.Lock()
		f.targetsDir = "" // nobody reads them any more
		f.targetsMu.Unlock()
	})
	f.opt.Log.Info("prometheus up", "url", p.URL, "rules", f.opt.RulesFile, "time_scale", scale, "targets", targets)
	return nil
}

// promConfig is prometheus.yml: scrape, evaluation and target-file
// refresh every interval (Prometheus also watches the files, and reads a
// rename at once; the refresh is the fallback).
func promConfig(interval time.Duration) []byte {
	d := promDuration(interval)
	var conf strings.Builder
	fmt.Fprintf(&conf, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n  scrape_timeout: %s\nrule_files: [attestd-rules.yml]\nscrape_configs:\n", d, d, d)
	for _, j := range promJobs {
		fmt.Fprintf(&conf, "  - job_name: %s\n    file_sd_configs: [{files: [targets/%s.json], refresh_interval: %s}]\n", j.job, j.role, d)
	}
	return []byte(conf.String())
}

// promTargetGroup is one entry of a file_sd targets file.
type promTargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// writeTargets rewrites every role's targets file (nothing before
// Prometheus is configured or after it stopped) from the fleet's members:
// each process's current metrics address, labelled with its role and
// name (serve-1 ...), unless it was taken out with Stop. A killed process
// stays a target: its scrape fails (up 0) and AttestdProcessDown fires,
// as for a crash. Each file is replaced atomically (written beside it,
// then renamed), so Prometheus never reads half a file.
func (f *Fleet) writeTargets() error {
	f.targetsMu.Lock()
	defer f.targetsMu.Unlock()
	if f.targetsDir == "" {
		return nil
	}
	for _, j := range promJobs {
		groups := []promTargetGroup{}
		for _, p := range f.Procs() {
			if p.Role != j.role {
				continue
			}
			addr, in := p.target()
			if in {
				groups = append(groups, promTargetGroup{Targets: []string{addr}, Labels: map[string]string{"role": p.Role, "name": p.Name}})
			}
		}
		b, err := json.MarshalIndent(groups, "", "  ")
		if err != nil {
			return fmt.Errorf("prometheus targets: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(f.targetsDir, j.role+".json"), append(b, '\n')); err != nil {
			return fmt.Errorf("prometheus targets of %s: %w", j.job, err)
		}
	}
	return nil
}

// targetsChanged is every process's hook (Proc.changed): it rewrites the
// targets files, logging a failure (the processes go on regardless).
func (f *Fleet) targetsChanged() {
	if err := f.writeTargets(); err != nil {
		f.opt.Log.Warn("prometheus targets not rewritten", "err", err)
	}
}

// writeFileAtomic writes b to a temporary file in name's directory and
// renames it to name: a reader sees the old file or the new, whole.
func writeFileAtomic(name string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing is there
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("rename to %s: %w", name, err)
	}
	return nil
}

var (
	ruleRange = regexp.MustCompile(`\[(\d+)([smh])\]`)
	ruleFor   = regexp.MustCompile(`(?m)^(\s+for: )(\d+)([smh])\s*$`)
)

// ScaleRuleTimes divides every `for` and range-selector duration of a rule
// file by scale (at least a second each), so a test sees an alert whose
// production window is minutes fire within seconds, with the same
// expressions; scale 1 returns the rules unchanged.
func ScaleRuleTimes(rules []byte, scale int) []byte {
	if scale <= 1 {
		return rules
	}
	shrink := func(n, unit string) string {
		v, _ := strconv.Atoi(n)
		d := time.Duration(v) * map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
		d /= time.Duration(scale)
		if d < time.Second {
			d = time.Second
		}
		return promDuration(d)
	}
	out := ruleRange.ReplaceAllStringFunc(string(rules), func(m string) string {
		s := ruleRange.FindStringSubmatch(m)
		return "[" + shrink(s[1], s[2]) + "]"
	})
	out = ruleFor.ReplaceAllStringFunc(out, func(m string) string {
		s := ruleFor.FindStringSubmatch(m)
		return s[1] + shrink(s[2], s[3])
	})
	return []byte(out)
}

// promDuration is d in whole seconds, as Prometheus reads durations.
func promDuration(d time.Duration) string {
	return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s"
}
