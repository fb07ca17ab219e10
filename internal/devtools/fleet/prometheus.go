package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
)

// startPrometheus runs Prometheus scraping every attestd process by role
// (jobs attestd-serve, attestd-index, attestd-worker, as
// docs/operations.md's Alerts asks) with the fleet's rules loaded. Its
// targets are the processes' metrics addresses at start: a node the fleet
// test replaces (Proc.Replace, on a new metrics port) is not followed.
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
	var conf strings.Builder
	fmt.Fprintf(&conf, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n  scrape_timeout: %s\nrule_files: [attestd-rules.yml]\nscrape_configs:\n",
		promDuration(interval), promDuration(interval), promDuration(interval))
	for _, role := range []struct {
		job   string
		procs []*Proc
	}{{"attestd-serve", f.Serve}, {"attestd-index", f.Index}, {"attestd-worker", f.Worker}} {
		var targets []string
		for _, p := range role.procs {
			targets = append(targets, strconv.Quote(p.MetricsAddr))
		}
		fmt.Fprintf(&conf, "  - job_name: %s\n    static_configs: [{targets: [%s]}]\n", role.job, strings.Join(targets, ", "))
	}
	p, err := devstack.StartPrometheus(ctx, filepath.Join(f.opt.Dir, "prometheus"), devstack.PrometheusOptions{
		Config: []byte(conf.String()), Files: map[string][]byte{"attestd-rules.yml": ScaleRuleTimes(rules, scale)}})
	if err != nil {
		return err
	}
	f.Prometheus = p
	f.closers = append(f.closers, p.Stop)
	f.opt.Log.Info("prometheus up", "url", p.URL, "rules", f.opt.RulesFile, "time_scale", scale)
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
