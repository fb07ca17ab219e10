package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/prova"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhook/keyring"
	"github.com/attestd/attestd/webhook/signature"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	rateLimit = 40
	loadIP    = "192.0.2.1" // allowlisted: the background load is never limited
)

// load is light, bounded GET traffic through nginx: a few clients, each
// pacing its requests, on list pages the edge has not cached (so they
// reach the nodes). It counts answers other than 200 and transport errors.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []string
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func startLoad(base string, clients int, pace time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	var seq atomic.Int64
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			t := time.NewTicker(pace)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				n := seq.Add(1)
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/attestations?limit=5&offset=%d", base, n%20000), nil)
				req.Header.Set("X-Forwarded-For", loadIP)
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						l.ok.Add(1)
						continue
					}
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if ctx.Err() != nil {
					return
				}
				l.failed.Add(1)
				l.mu.Lock()
				if len(l.failures) < 10 {
					l.failures = append(l.failures, err.Error())
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// stop ends the load and returns its totals.
func (l *load) stop() (ok, failed int64, failures []string) {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok.Load(), l.failed.Load(), l.failures
}

// nodeHealth asks one API node's /health from the allowlisted load
// address: a test polling it every few milliseconds from its own address
// would spend that address's limit (40 a minute) within a second, then
// read 429s until the minute ends.
func nodeHealth(p *Proc) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+p.Addr+"/api/v1/health", nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Forwarded-For", loadIP)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// fresh numbers the pages limitThroughEdge asks, so that none was cached
// by the edge before (a cached answer never reaches a node's limiter).
var fresh atomic.Int64

// limitThroughEdge sends n requests for pages nobody asked for yet, from
// one client address, through nginx, and counts 200s and 429s.
func limitThroughEdge(t *testing.T, f *Fleet, ip string, n int) (ok, limited int) {
	t.Helper()
	for i := range n {
		page := fresh.Add(1)
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/attestations?limit=%d&offset=%d", f.URL(), 1+page%100, 20000+page/100), nil)
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := http.DefaultClient.Do(req)
		testenv.Must(t, err, "request %d", i)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("request %d from %s: %s", i, ip, resp.Status)
		}
	}
	return ok, limited
}

// served is how many requests each API node has answered.
func served(t *testing.T, f *Fleet) []float64 {
	t.Helper()
	var out []float64
	for _, p := range f.Serve {
		m, err := scrape(context.Background(), "http://"+p.MetricsAddr+"/metrics")
		testenv.Must(t, err, "metrics of %s", p.Name)
		var n float64
		for k, v := range m {
			if strings.HasPrefix(k, "attestd_http_request_duration_seconds_count") {
				n += v
			}
		}
		out = append(out, n)
	}
	return out
}

// chainAttestations is the ground truth: attestations the chain recorded.
func chainAttestations(c *devnet.Chain) int {
	n := 0
	for _, e := range c.Events() {
		switch e.Event.(type) {
		case prova.AttestationIssued, *prova.AttestationIssued:
			n++
		}
	}
	return n
}

// TestFleetSurvivesItsParts runs the whole fleet from the built binary
// and takes it apart: the per-IP limit through nginx, an API node killed,
// the leading indexer killed, a worker killed, Redis restarted, a rolling
// restart of every API node, the read replica stopped. It logs the
// figures: requests failed per kill, leader takeover time, events
// delivered twice.
func TestFleetSurvivesItsParts(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	ctx := context.Background()
	f, err := Start(ctx, Options{Bin: bin, Dir: testenv.TempDir(t, "fleet-"), NginxConf: "../../../deploy/nginx.conf",
		Agents: 5, Attestations: 300, FinalityDepth: 8, SlotInterval: 200 * time.Millisecond, WitnessedLog: true,
		// The shipped rules in a real Prometheus, their windows shrunk 12-fold
		// (a minute's `for` is 5 s) so alerts fire and resolve within the test.
		RulesFile: "../../../deploy/prometheus/attestd-rules.yml", AlertTimeScale: 12,
		Env: []string{
			fmt.Sprintf("ATTESTD_RATE_LIMIT=%d", rateLimit), "ATTESTD_RATE_WINDOW=60s", "ATTESTD_RATE_ALLOWLIST=" + loadIP + "/32",
			"ATTESTD_INDEXER_POLL_INTERVAL=250ms", "ATTESTD_WEBHOOK_CLAIM_IDLE=2s", "ATTESTD_WEBHOOK_POLL_INTERVAL=20ms",
			"ATTESTD_WEBHOOK_RETRY_SCHEDULE=1s,1s,1s", "ATTESTD_SHUTDOWN_TIMEOUT=5s", "ATTESTD_LOG_LEVEL=info",
			"ATTESTD_DRAIN_TIMEOUT=3s", // longer than a node takes to start: its replacement listens before it stops
		}})
	testenv.Must(t, err, "start the fleet")
	t.Cleanup(f.Close)
	st, err := store.Open(ctx, f.Primary.URL, store.Options{MaxConns: 2})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	stored := func() (rows, distinct int) {
		err := st.Pool().QueryRow(ctx, "SELECT count(*), count(DISTINCT pda) FROM attestations").Scan(&rows, &distinct)
		testenv.Must(t, err, "count attestations")
		return rows, distinct
	}
	testenv.WaitFor(t, "initial traffic indexed", 60*time.Second, func() bool { r, _ := stored(); return r == chainAttestations(f.Chain) })
	var s Status
	testenv.WaitFor(t, "the status line sees the whole fleet", 90*time.Second, func() bool {
		s = f.Status(ctx)
		return s.Edge && s.API == 3 && s.IndexerUp == 2 && s.Leader != "" && s.WorkersUp == 2 && s.Attestations == int64(chainAttestations(f.Chain))
	})
	t.Logf("status: %s", s)

	t.Run("the log is witnessed by the fleet's witness", func(t *testing.T) {
		var last string
		testenv.WaitFor(t, "a served checkpoint cosigned by the local witness", 30*time.Second, func() bool {
			req, err := http.NewRequest(http.MethodGet, "http://"+f.Serve[1].Addr+"/api/v1/health", nil)
			testenv.Must(t, err, "request")
			req.Header.Set("X-Forwarded-For", loadIP) // allowlisted: polling spends no limit
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer res.Body.Close()
			var h struct {
				Log *struct {
					Size        int64
					Quorum      int
					WitnessedBy []string
				}
			}
			if json.NewDecoder(res.Body).Decode(&h) != nil || h.Log == nil {
				return false
			}
			last = fmt.Sprintf("%+v", *h.Log)
			return h.Log.Quorum == 1 && h.Log.Size > 0 && slices.Contains(h.Log.WitnessedBy, f.Witness.Name)
		})
		t.Logf("log: %s", last)
	})

	t.Run("per-IP limit holds exactly through nginx across nodes", func(t *testing.T) {
		before := served(t, f)
		ok, limited := limitThroughEdge(t, f, "198.51.100.7", rateLimit+15)
		if ok != rateLimit || limited != 15 {
			t.Fatalf("%d answered, %d limited; want exactly %d and 15", ok, limited, rateLimit)
		}
		after, spread := served(t, f), 0
		for i := range after {
			if after[i] > before[i] {
				spread++
			}
		}
		if spread < 2 {
			t.Fatalf("the requests reached %d node(s); the limit was not shared across nodes", spread)
		}
		t.Logf("limit %d per minute through nginx over %d nodes: %d answered, %d limited", rateLimit, spread, ok, limited)
	})

	t.Run("API node killed: nginx routes around it", func(t *testing.T) {
		l := startLoad(f.URL(), 4, 10*time.Millisecond)
		testenv.WaitFor(t, "load flowing", 10*time.Second, func() bool { return l.ok.Load() > 50 })
		victim := f.Serve[0]
		victim.Kill()
		mark := l.ok.Load()
		testenv.WaitFor(t, "load after the kill", 10*time.Second, func() bool { return l.ok.Load() > mark+200 })
		ok, failed, failures := l.stop()
		t.Logf("kill -9 %s under load: %d requests answered, %d failed %v", victim.Name, ok, failed, failures)
		if failed > 4 { // at most the requests in flight on the killed node (4 clients)
			t.Errorf("%d requests failed; only those in flight (at most 4) may", failed)
		}
		testenv.Must(t, victim.Restart(ctx), "restart %s", victim.Name)
	})

	t.Run("leading indexer killed: the other leads, nothing missing or doubled", func(t *testing.T) {
		var leader, other *Proc
		testenv.WaitFor(t, "a leader", 10*time.Second, func() bool {
			for _, p := range f.Index {
				if v, err := p.Metric(ctx, "attestd_indexer_leader"); err == nil && v == 1 {
					leader = p
				}
			}
			return leader != nil
		})
		for _, p := range f.Index {
			if p != leader {
				other = p
			}
		}
		gen := make(chan error, 1)
		go func() { _, err := f.Chain.Generate(ctx, 5, 400, 20); gen <- err }()
		killed := time.Now()
		leader.Kill()
		testenv.WaitFor(t, "the other indexer leads", 10*time.Second, func() bool {
			v, err := other.Metric(ctx, "attestd_indexer_leader")
			return err == nil && v == 1
		})
		takeover := time.Since(killed) // from the kill -9 to the other's leader gauge, polled every 20 ms
		testenv.Must(t, <-gen, "generate attestations")
		want := chainAttestations(f.Chain)
		testenv.WaitFor(t, "every attestation indexed", 60*time.Second, func() bool { r, _ := stored(); return r >= want })
		rows, distinct := stored()
		if rows != want || distinct != want {
			t.Fatalf("stored %d rows (%d distinct), the chain recorded %d", rows, distinct, want)
		}
		var stats struct {
			Attestations int `json:"attestations"`
		}
		testenv.WaitFor(t, "the API counts them", 30*time.Second, func() bool {
			resp, err := http.Get("http://" + f.Serve[1].Addr + "/api/v1/stats")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return json.NewDecoder(resp.Body).Decode(&stats) == nil && stats.Attestations == want
		})
		t.Logf("kill -9 the leading indexer %s: %s led after %v (killed at %s); %d attestations on chain, %d stored, none missing or doubled",
			leader.Name, other.Name, takeover.Round(time.Millisecond), killed.Format("15:04:05.000"), want, rows)
		testenv.Must(t, leader.Restart(ctx), "restart %s", leader.Name)
	})

	t.Run("worker killed: no webhook lost", func(t *testing.T) {
		var mu sync.Mutex
		got, total := map[string]int{}, 0
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if answer, ok := webhook.ChallengeAnswer(body); ok { // the endpoint verification
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(answer)
				return
			}
			var e struct {
				Type string
				Data struct{ PDA string }
			}
			_ = json.Unmarshal(body, &e)
			time.Sleep(5 * time.Millisecond) // a receiver that takes its time: the workers hold a backlog
			mu.Lock()
			if e.Type == "attestation.created" {
				got[e.Data.PDA]++
				total++
			}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(rc.Close)
		received := func() (int, int) { mu.Lock(); defer mu.Unlock(); return len(got), total }

		keys, err := keyring.Parse(f.WebhookKeys)
		testenv.Must(t, err, "keyring")
		acc, _, err := st.EnsureAccount(ctx, "fleet")
		testenv.Must(t, err, "account")
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := "wh_" + hex.EncodeToString(b[:])
		secret, _ := signature.NewSecret()
		sealed, keyID, err := keys.Seal([]byte(secret), []byte(id))
		testenv.Must(t, err, "seal")
		_, err = st.InsertWebhook(ctx, store.Webhook{ID: id, AccountID: acc.ID, URL: rc.URL + "/hook",
			Events: []string{"attestation.created"}, SecretSealed: sealed, SecretKeyID: keyID}, 0)
		testenv.Must(t, err, "webhook")

		const n = 600
		before, _ := stored()
		_, err = f.Chain.Generate(ctx, 5, n, 50)
		testenv.Must(t, err, "generate attestations")
		testenv.WaitFor(t, "deliveries under way", 60*time.Second, func() bool { d, _ := received(); return d >= n/6 })
		victim := f.Worker[0]
		victim.Kill()
		atKill, _ := received()
		testenv.WaitFor(t, "every event delivered", 120*time.Second, func() bool { d, _ := received(); return d >= n })
		rows, _ := stored()
		distinct, all := received()
		if rows-before != n || distinct != n {
			t.Fatalf("%d new attestations stored, %d distinct events delivered; want %d", rows-before, distinct, n)
		}
		t.Logf("kill -9 %s after %d of %d events: every event delivered, %d delivered twice (at least once)", victim.Name, atKill, n, all-distinct)
		testenv.Must(t, victim.Restart(ctx), "restart %s", victim.Name)
	})

	t.Run("Redis restarted: reads continue, the limiter falls back and recovers", func(t *testing.T) {
		l := startLoad(f.URL(), 2, 10*time.Millisecond)
		testenv.WaitFor(t, "load flowing", 10*time.Second, func() bool { return l.ok.Load() > 20 })
		err := f.RestartRedis(ctx, func() {
			mark := l.ok.Load()
			testenv.WaitFor(t, "reads while Redis is down", 20*time.Second, func() bool { return l.ok.Load() > mark+100 })
			// Without Redis each node's own window decides: still limited.
			ok, limited := limitThroughEdge(t, f, "198.51.100.8", 3*rateLimit+10)
			if limited == 0 || ok > 3*rateLimit {
				t.Errorf("with Redis down: %d answered, %d limited; each node's window must still limit", ok, limited)
			}
			t.Logf("Redis down: one client got %d answered, %d limited (each node's own window, %d nodes)", ok, limited, len(f.Serve))
		})
		testenv.Must(t, err, "restart redis")
		testenv.WaitForState(t, "every node sees Redis again", 30*time.Second, func() (bool, string) {
			for _, p := range f.Serve {
				var h struct{ Redis string }
				status, body, err := nodeHealth(p)
				if err != nil || json.Unmarshal(body, &h) != nil || h.Redis != "ok" {
					return false, fmt.Sprintf("%s: %d %.300s %v", p.Name, status, body, err)
				}
			}
			return true, ""
		})
		var ok, limited int
		testenv.WaitFor(t, "the shared limit back", 30*time.Second, func() bool {
			ok, limited = limitThroughEdge(t, f, fmt.Sprintf("198.51.100.%d", 100+time.Now().Nanosecond()%100), rateLimit+10)
			return ok == rateLimit && limited == 10
		})
		okLoad, failed, failures := l.stop()
		if failed != 0 {
			t.Errorf("%d reads failed while Redis restarted: %v", failed, failures)
		}
		t.Logf("Redis restarted under load: %d reads answered, %d failed; the shared limit is exact again (%d answered, %d limited)", okLoad, failed, ok, limited)
	})

	t.Run("rolling restart of every API node under load: zero errors", func(t *testing.T) {
		l := startLoad(f.URL(), 3, 10*time.Millisecond)
		testenv.WaitFor(t, "load flowing", 10*time.Second, func() bool { return l.ok.Load() > 30 })
		nginxLog := len(f.Nginx.ErrorLog())
		// Back to back, as a deploy tool does it: SIGTERM a node, start its
		// replacement on the same address, wait until the replacement is
		// ready, go on to the next. Nothing waits for nginx: the old node
		// drains (serving, closing each keep-alive connection after its
		// answer) until after its replacement listens, so nginx never
		// fails to reach the address and fail_timeout never comes into
		// play. Without the drain, nginx takes each address out for
		// fail_timeout and, three nodes later, has none left.
		start := time.Now()
		var olds []*Proc
		before := map[string]bool{}
		for _, p := range f.Serve {
			before[p.MetricsAddr] = true
		}
		for _, p := range f.Serve {
			old, err := p.Replace(ctx)
			testenv.Must(t, err, "replace %s", p.Name)
			olds = append(olds, old)
		}
		replaced := time.Since(start)
		for _, old := range olds {
			if !old.Wait(30 * time.Second) {
				t.Errorf("%s did not stop within 30 s of SIGTERM", old.Name)
			}
		}
		// Prometheus follows the replacements (file service discovery):
		// the new metrics addresses are scraped, the old ones gone.
		for _, p := range f.Serve {
			if before[p.MetricsAddr] {
				t.Fatalf("%s kept its metrics address %s", p.Name, p.MetricsAddr)
			}
		}
		waitScraped(t, ctx, f, "attestd-serve", f.Serve...)
		mark := l.ok.Load() + l.failed.Load()
		testenv.WaitFor(t, "load after the restarts", 10*time.Second, func() bool { return l.ok.Load()+l.failed.Load() > mark+100 })
		ok, failed, failures := l.stop()
		t.Logf("rolling restart of %d API nodes under load, replacements ready after %v: %d requests answered, %d failed %v",
			len(f.Serve), replaced.Round(time.Millisecond), ok, failed, failures)
		if failed != 0 {
			el := f.Nginx.ErrorLog()
			t.Errorf("%d requests failed during the rolling restart; nginx said:\n%s", failed, head(el[min(nginxLog, len(el)):], 3000))
		}
		for _, p := range f.Serve {
			b, err := os.ReadFile(p.LogPath)
			testenv.Must(t, err, "read %s", p.LogPath)
			if !strings.Contains(string(b), "draining: /health answers 503") || !strings.Contains(string(b), `"msg":"drain over"`) {
				t.Errorf("%s logged no drain start and end:\n%s", p.Name, tail(string(b), 2000))
			}
		}
	})

	// alert reports whether Prometheus has name firing with labels
	// including match.
	alert := func(t *testing.T, name string, match map[string]string) (firing bool) {
		t.Helper()
		as, err := f.Prometheus.Alerts(ctx)
		testenv.Must(t, err, "prometheus alerts")
		for _, a := range as {
			if a.Labels["alertname"] != name || a.State != "firing" {
				continue
			}
			all := true
			for k, v := range match {
				all = all && a.Labels[k] == v
			}
			if all {
				return true
			}
		}
		return false
	}

	t.Run("every indexer killed: the indexer alerts fire in Prometheus, and resolve after the restart", func(t *testing.T) {
		// (Only the index job's ProcessDown: the API nodes are not killed
		// here. After the rolling restart above, Prometheus scrapes their
		// replacements' new metrics ports: the fleet rewrites its file_sd
		// targets, so no API node is down.)
		index := map[string]string{"job": "attestd-index"}
		for _, name := range []string{"AttestdNoIndexerLeader", "AttestdProcessDown"} {
			if alert(t, name, index) {
				t.Fatalf("%s fires before anything was killed", name)
			}
		}
		for _, p := range f.Index {
			p.Kill()
		}
		fired := testenv.WaitFor(t, "AttestdNoIndexerLeader and AttestdProcessDown{job=attestd-index} firing", 90*time.Second, func() bool {
			return alert(t, "AttestdNoIndexerLeader", nil) && alert(t, "AttestdProcessDown", index)
		})
		for _, p := range f.Index {
			testenv.Must(t, p.Restart(ctx), "restart %s", p.Name)
		}
		resolved := testenv.WaitForState(t, "the indexer alerts resolved after the restart", 90*time.Second, testenv.Every(250*time.Millisecond, func() (bool, string) {
			if !alert(t, "AttestdNoIndexerLeader", nil) && !alert(t, "AttestdProcessDown", index) {
				return true, ""
			}
			as, _ := f.Prometheus.Alerts(ctx)
			return false, fmt.Sprintf("alerts %+v", as)
		}))
		t.Logf("indexers killed: alerts firing after %v (rules' for: 2m and 1m, scaled 12-fold); resolved %v after the restart", fired.Round(time.Second), resolved.Round(time.Second))
	})

	t.Run("the chain's RPC unreachable: AttestdChainStalled fires in Prometheus, and resolves when it is back", func(t *testing.T) {
		if alert(t, "AttestdChainStalled", nil) {
			t.Fatal("AttestdChainStalled fires before the chain went away")
		}
		f.Chain.Unreachable(true)
		fired := testenv.WaitFor(t, "AttestdChainStalled firing", 90*time.Second, func() bool { return alert(t, "AttestdChainStalled", nil) })
		f.Chain.Unreachable(false)
		resolved := testenv.WaitFor(t, "AttestdChainStalled resolved", 90*time.Second, func() bool { return !alert(t, "AttestdChainStalled", nil) })
		t.Logf("chain RPC down: AttestdChainStalled firing after %v (scaled 12-fold); resolved %v after it was back", fired.Round(time.Second), resolved.Round(time.Second))
	})

	t.Run("replica stopped: reads move to the primary", func(t *testing.T) {
		l := startLoad(f.URL(), 2, 10*time.Millisecond)
		testenv.WaitFor(t, "load flowing", 10*time.Second, func() bool { return l.ok.Load() > 20 })
		f.Replica.Stop()
		testenv.WaitForState(t, "every node reports the replica out of use", 30*time.Second, func() (bool, string) {
			for _, p := range f.Serve {
				status, body, err := nodeHealth(p)
				if err != nil || status != http.StatusOK || !strings.Contains(string(body), "its reads go to the primary") || !strings.Contains(string(body), `"degraded"`) {
					return false, fmt.Sprintf("%s: %d %.300s %v", p.Name, status, body, err)
				}
			}
			return true, ""
		})
		mark := l.ok.Load()
		testenv.WaitFor(t, "reads from the primary", 20*time.Second, func() bool { return l.ok.Load() > mark+100 })
		ok, failed, failures := l.stop()
		t.Logf("replica stopped under load: %d reads answered, %d failed %v", ok, failed, failures)
		if failed > 2 { // at most the reads in flight on the replica when it went
			t.Errorf("%d reads failed after the replica stopped", failed)
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
