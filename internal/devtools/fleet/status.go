package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Status is what the fleet looks like now.
type Status struct {
	API, APITotal       int    // API nodes answering /health with 200
	Edge                bool   // nginx answers /health with 200
	Leader              string // the indexer holding the writer lock ("" when none)
	LagSlots            int64  // the leader's lag behind the chain, slots
	Indexers, IndexerUp int
	Workers, WorkersUp  int
	Delivered, Retrying int64 // deliveries all workers count as succeeded, retrying
	ChainSlot           uint64
	Attestations        int64 // what /stats through nginx counts (-1: no answer)
}

// String is the one-line summary `attestd cluster` prints.
func (s Status) String() string {
	leader := s.Leader
	if leader == "" {
		leader = "none"
	}
	edge := "up"
	if !s.Edge {
		edge = "DOWN"
	}
	return fmt.Sprintf("nginx %s | api %d/%d up | index %d/%d, leader %s, lag %d slots | workers %d/%d, delivered %d, retrying %d | chain slot %d, %d attestations served",
		edge, s.API, s.APITotal, s.IndexerUp, s.Indexers, leader, s.LagSlots, s.WorkersUp, s.Workers, s.Delivered, s.Retrying, s.ChainSlot, s.Attestations)
}

// Status asks every part, in parallel, within 2 s.
func (f *Fleet) Status(ctx context.Context) Status {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s := Status{APITotal: len(f.Serve), Indexers: len(f.Index), Workers: len(f.Worker), ChainSlot: f.Chain.Slot(), Attestations: -1}
	var mu sync.Mutex
	var wg sync.WaitGroup
	do := func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }
	do(func() {
		ok := get(ctx, f.URL()+"/health") == nil
		mu.Lock()
		s.Edge = ok
		mu.Unlock()
	})
	do(func() {
		var stats struct {
			Attestations int64 `json:"attestations"`
		}
		if getJSON(ctx, f.URL()+"/stats", &stats) == nil {
			mu.Lock()
			s.Attestations = stats.Attestations
			mu.Unlock()
		}
	})
	for _, p := range f.Serve {
		do(func() {
			if !p.Running() {
				return
			}
			if get(ctx, "http://"+p.Addr+"/api/v1/health") == nil {
				mu.Lock()
				s.API++
				mu.Unlock()
			}
		})
	}
	for _, p := range append(append([]*Proc{}, f.Index...), f.Worker...) {
		do(func() {
			if !p.Running() {
				return
			}
			m, err := scrape(ctx, "http://"+p.MetricsAddr+"/metrics")
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if p.Role == "index" {
				s.IndexerUp++
				if m["attestd_indexer_leader"] == 1 {
					s.Leader, s.LagSlots = p.Name, int64(m["attestd_indexer_lag_slots"])
				}
				return
			}
			s.WorkersUp++
			s.Delivered += int64(m[`attestd_webhook_deliveries_total{result="succeeded"}`])
			s.Retrying += int64(m[`attestd_webhook_deliveries_total{result="retrying"}`])
		})
	}
	wg.Wait()
	return s
}

func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Metric reads one sample of a process's /metrics, by its name with
// labels as the exposition format writes them (0 when absent).
func (p *Proc) Metric(ctx context.Context, sample string) (float64, error) {
	m, err := scrape(ctx, "http://"+p.MetricsAddr+"/metrics")
	return m[sample], err
}

// scrape reads a Prometheus text exposition into sample -> value.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}
