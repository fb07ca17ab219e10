package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Prometheus is a running Prometheus server (the Debian package) on
// loopback, for make cluster and the fleet's alert tests.
type Prometheus struct {
	URL  string // http://127.0.0.1:port
	proc *process
}

// PrometheusOptions say what it scrapes and evaluates.
type PrometheusOptions struct {
	// Config is prometheus.yml; it may name rule files relative to dir.
	Config []byte
	// Files are written into dir beside it (rule files), by name.
	Files map[string][]byte
}

// StartPrometheus writes the configuration under dir and starts
// Prometheus on a free loopback port with its data there, installing the
// Debian package when missing and root; it returns once Prometheus is ready.
func StartPrometheus(ctx context.Context, dir string, opt PrometheusOptions) (*Prometheus, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil && os.Geteuid() == 0 {
		if err := AptInstall("prometheus"); err != nil {
			return nil, err
		}
		bin, err = exec.LookPath("prometheus")
	}
	if err != nil {
		return nil, errors.New("prometheus (the Debian package prometheus) is not installed")
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	for name, b := range opt.Files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, opt.Config, 0o644); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=1d")
	cmd.Dir = dir
	p, err := startProcess("prometheus", cmd, nil, filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	pr := &Prometheus{URL: "http://" + addr, proc: p}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if res, err := http.Get(pr.URL + "/-/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return pr, nil
			}
		}
		if p.exited() {
			return nil, fmt.Errorf("prometheus exited at start; see %s", filepath.Join(dir, "prometheus.log"))
		}
		select {
		case <-wctx.Done():
			pr.Stop()
			return nil, fmt.Errorf("prometheus not ready within 60 s; see %s", filepath.Join(dir, "prometheus.log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop shuts Prometheus down (SIGTERM, 10 s grace).
func (p *Prometheus) Stop() { p.proc.stop(syscall.SIGTERM, 10*time.Second) }

// Alert is one alert as Prometheus's /api/v1/alerts lists it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending or firing
}

// Alerts lists the alerts pending or firing now.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus alerts: %w", err)
	}
	defer res.Body.Close()
	var body struct {
		Status string
		Data   struct{ Alerts []Alert }
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, res.Body, 8<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("prometheus alerts: %w", err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus alerts: status %q", body.Status)
	}
	return body.Data.Alerts, nil
}
