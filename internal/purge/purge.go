package purge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/metric"
	"github.com/prometheus/client_golang/prometheus"
)

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_PURGE_URL", Default: "(none)", Help: "URL the index writer POSTs to after each epoch change, to purge the CDN by surrogate key; unset: off"},
	{Name: "ATTESTD_PURGE_HEADER", Default: "(none)", Help: "one header sent with each purge, as Name: value (the CDN's credential)"},
	{Name: "ATTESTD_PURGE_TIMEOUT", Default: "5s", Help: "deadline of one purge call"},
	{Name: "ATTESTD_PURGE_RETRIES", Default: "3", Help: "retries of a failed purge call, 0.5 s apart then doubling"},
	{Name: "ATTESTD_PURGE_MIN_INTERVAL", Default: "1s", Help: "least time between two purge calls; epochs in between are purged by one call"},
}

// Headers of a purge call besides Content-Type and the configured one.
const (
	HeaderEpoch = "Attestd-Epoch" // the epoch the call purges for
)

// Config configures a Purger.
type Config struct {
	URL         string // absolute http(s) URL; empty: off
	HeaderName  string // optional extra header (the CDN's credential)
	HeaderValue string
	Timeout     time.Duration // one call; default 5 s
	Retries     int           // after the first call; default 3 (set NoRetries for none)
	NoRetries   bool
	MinInterval time.Duration // between calls; default 1 s (negative: none)
	// Keys are the surrogate keys purged (default httpcache.EpochKeys).
	Keys       []string
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Client sends the calls (default: a client that follows no redirects).
	Client *http.Client
}

// Enabled reports whether a URL is configured.
func (c Config) Enabled() bool { return c.URL != "" }

// maxHeaderValue bounds ATTESTD_PURGE_HEADER's value.
const maxHeaderValue = 4096

// ConfigFromEnv reads Vars with getenv (the process environment when nil).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	c := Config{
		URL:         e.String("ATTESTD_PURGE_URL", ""),
		Timeout:     e.Duration("ATTESTD_PURGE_TIMEOUT", 5*time.Second, 100*time.Millisecond, time.Minute),
		Retries:     e.Int("ATTESTD_PURGE_RETRIES", 3, 0, 10),
		MinInterval: e.Duration("ATTESTD_PURGE_MIN_INTERVAL", time.Second, 0, time.Hour),
	}
	c.NoRetries = c.Retries == 0
	if c.MinInterval == 0 {
		c.MinInterval = -1
	}
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.Fail("ATTESTD_PURGE_URL", "want an absolute http or https URL, got %q", c.URL)
		}
	}
	if h := e.String("ATTESTD_PURGE_HEADER", ""); h != "" {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || !validHeaderName(name) || value == "" || len(value) > maxHeaderValue || strings.ContainsAny(value, "\r\n\x00") {
			e.Fail("ATTESTD_PURGE_HEADER", "want Name: value (a header name, a colon, a value of at most %d bytes)", maxHeaderValue)
		} else {
			c.HeaderName, c.HeaderValue = name, value
		}
	}
	return c, e.Err()
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Purger calls the purge URL after epoch changes, from one goroutine:
// never more than one call in flight, at most one call per MinInterval,
// and each call for the newest epoch heard so far, so a burst of epochs
// costs one call. A failed call is retried (Retries times, with backoff),
// then given up and logged; the next epoch change calls again.
type Purger struct {
	cfg    Config
	url    string // redacted, for logs
	body   []byte
	keys   string
	log    *slog.Logger
	latest atomic.Uint64 // newest epoch heard
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	m      *metrics
}

// New starts a purger; Close stops it.
func New(cfg Config) (*Purger, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("purge URL %q: want an absolute http or https URL", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.NoRetries {
		cfg.Retries = 0
	} else if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = time.Second
	}
	if len(cfg.Keys) == 0 {
		cfg.Keys = httpcache.EpochKeys
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	body, err := json.Marshal(struct {
		Tags []string `json:"tags"`
	}{cfg.Keys})
	if err != nil {
		return nil, fmt.Errorf("encode purge body: %w", err)
	}
	p := &Purger{cfg: cfg, url: u.Redacted(), body: body, keys: strings.Join(cfg.Keys, " "), log: cfg.Logger,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), m: newMetrics(cfg.Registerer)}
	go p.run()
	return p, nil
}

// Epoch tells the purger the index moved to epoch e. It never blocks.
func (p *Purger) Epoch(e uint64) {
	for {
		cur := p.latest.Load()
		if e <= cur || p.latest.CompareAndSwap(cur, e) {
			break
		}
	}
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is already pending; it will read the newest epoch
	}
}

// Close stops the purger. A purge still pending is sent once (within
// Timeout) before it returns.
func (p *Purger) Close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

func (p *Purger) run() {
	defer close(p.done)
	var sent uint64
	var last time.Time
	for {
		select {
		case <-p.wake:
		case <-p.stop:
			p.flush(sent)
			return
		}
		if wait := time.Until(last.Add(p.cfg.MinInterval)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.stop:
				t.Stop()
				p.flush(sent)
				return
			}
		}
		if e := p.latest.Load(); e > sent {
			sent = max(sent, p.callWithRetries(e))
			last = time.Now()
		}
	}
}

// flush makes one last call, within Timeout, when an epoch newer than
// sent is pending.
func (p *Purger) flush(sent uint64) {
	e := p.latest.Load()
	if e <= sent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	if err := p.call(ctx, e); err != nil {
		p.m.calls.WithLabelValues("error").Inc()
		p.log.Warn("edge purge at shutdown failed", "url", p.url, "epoch", e, "err", err)
		return
	}
	p.m.calls.WithLabelValues("ok").Inc()
	p.m.epoch.Set(float64(e))
}

// callWithRetries purges for epoch e (the newest epoch at each attempt)
// and returns the epoch it purged for, or 0 when every attempt failed.
func (p *Purger) callWithRetries(e uint64) uint64 {
	backoff := 500 * time.Millisecond
	for attempt := 0; ; attempt++ {
		e = max(e, p.latest.Load())
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
		err := p.call(ctx, e)
		cancel()
		if err == nil {
			p.m.calls.WithLabelValues("ok").Inc()
			p.m.epoch.Set(float64(e))
			return e
		}
		p.m.calls.WithLabelValues("error").Inc()
		if attempt >= p.cfg.Retries {
			p.m.givenUp.Inc()
			p.log.Warn("edge purge failed; the next epoch change purges again, and answers expire by their s-maxage meanwhile",
				"url", p.url, "epoch", e, "attempts", attempt+1, "err", err)
			return 0
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-p.stop:
			t.Stop()
			return 0 // the stop branch makes one last call
		}
		backoff = min(2*backoff, 8*time.Second)
	}
}

var errStatus = errors.New("purge answered")

// call sends one purge: POST {"tags": [...]} with the keys in
// Surrogate-Key as well (the two forms CDNs' purge-by-key APIs read), the
// epoch in Attestd-Epoch, and the configured header. A 2xx is success.
func (p *Purger) call(ctx context.Context, e uint64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(p.body))
	if err != nil {
		return fmt.Errorf("build purge request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "attestd/"+buildinfo.Version)
	req.Header.Set(httpcache.HeaderSurrogateKey, p.keys)
	req.Header.Set(HeaderEpoch, strconv.FormatUint(e, 10))
	if p.cfg.HeaderName != "" {
		req.Header.Set(p.cfg.HeaderName, p.cfg.HeaderValue)
	}
	start := time.Now()
	res, err := p.cfg.Client.Do(req)
	p.m.seconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("purge call: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("%w %d", errStatus, res.StatusCode)
	}
	return nil
}

type metrics struct {
	calls   *prometheus.CounterVec
	givenUp prometheus.Counter
	epoch   prometheus.Gauge
	seconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_purge_calls_total",
			Help: "Edge purge calls by result (ok, error)."}, []string{"result"}),
		givenUp: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_purge_given_up_total",
			Help: "Edge purges given up after every retry failed."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_purge_epoch",
			Help: "The newest epoch a purge call succeeded for."}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_purge_call_seconds",
			Help: "Duration of edge purge calls.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
	}
	m.calls, m.givenUp = metric.Register(reg, m.calls), metric.Register(reg, m.givenUp)
	m.epoch, m.seconds = metric.Register(reg, m.epoch), metric.Register(reg, m.seconds)
	return m
}
