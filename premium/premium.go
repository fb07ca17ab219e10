package premium

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/apierror"
	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/store"
	"github.com/gofiber/fiber/v2"
)

// Rules are the anomaly thresholds and list sizes of forensic reports.
// They are part of every report (field thresholds) so an auditor knows what
// was looked for.
type Rules struct {
	// BurstPerMinute: a UTC calendar minute with at least this many of the
	// agent's attestations is a burst. Default 500: one record_attestations
	// transaction carries at most 100, so a burst is the work of five or more
	// full transactions in one minute.
	BurstPerMinute int `json:"burstPerMinute"`
	// LongGapSeconds: two consecutive attestations of the agent at least
	// this far apart bound a long gap. Default 86400 (24 h).
	LongGapSeconds int64 `json:"longGapSeconds"`
	// MaxAnomaliesPerKind: anomalies listed per kind, oldest first
	// (summary.anomalyCounts counts them all). Default 100.
	MaxAnomaliesPerKind int `json:"maxAnomaliesPerKind"`
	// RecheckNewest: how many of the newest attestations of the period
	// have their Ed25519 signature re-verified from the stored bytes while
	// the report is built. Default 1000.
	RecheckNewest int `json:"recheckNewest"`
}

// DefaultRules are the thresholds used when Options.Rules is zero.
var DefaultRules = Rules{BurstPerMinute: 500, LongGapSeconds: 86400, MaxAnomaliesPerKind: 100, RecheckNewest: 1000}

// Limits of GET /premium/full-history.
const (
	HistoryDefaultLimit = 1000
	HistoryMaxLimit     = 1000
	DefaultMemoEntries  = 200_000
)

// Options configure the premium routes.
type Options struct {
	Store  *store.Store // required
	Cache  *cache.Cache // required
	Logger *slog.Logger
	Now    func() time.Time
	Rules  Rules // zero fields take DefaultRules
	// MemoEntries bounds the in-process memo of signature checks (default
	// 200,000, about 20 MB; -1 disables it).
	MemoEntries int
}

// Handler serves the premium routes.
type Handler struct {
	store    *store.Store
	cache    *cache.Cache
	log      *slog.Logger
	now      func() time.Time
	rules    Rules
	rulesKey string
	verifier *verifier
}

// New makes the premium handlers.
func New(opt Options) (*Handler, error) {
	if opt.Store == nil || opt.Cache == nil {
		return nil, errors.New("premium: a store and a cache are required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	r := opt.Rules
	if r.BurstPerMinute <= 0 {
		r.BurstPerMinute = DefaultRules.BurstPerMinute
	}
	if r.LongGapSeconds <= 0 {
		r.LongGapSeconds = DefaultRules.LongGapSeconds
	}
	if r.MaxAnomaliesPerKind <= 0 {
		r.MaxAnomaliesPerKind = DefaultRules.MaxAnomaliesPerKind
	}
	if r.RecheckNewest <= 0 {
		r.RecheckNewest = DefaultRules.RecheckNewest
	}
	memo := opt.MemoEntries
	if memo == 0 {
		memo = DefaultMemoEntries
	}
	return &Handler{store: opt.Store, cache: opt.Cache, log: opt.Logger, now: opt.Now, rules: r,
		rulesKey: fmt.Sprintf("%d.%d.%d.%d", r.BurstPerMinute, r.LongGapSeconds, r.MaxAnomaliesPerKind, r.RecheckNewest),
		verifier: newVerifier(memo)}, nil
}

// Rules returns the thresholds in effect.
func (h *Handler) Rules() Rules { return h.rules }

// Routes adds the three premium routes, each behind auth (the API-key
// middleware, with its pay-per-request seam).
func (h *Handler) Routes(api *app.API, auth fiber.Handler) {
	api.Route(http.MethodGet, "/premium/full-history/:agentId", auth, h.fullHistory)
	api.Route(http.MethodGet, "/premium/forensic-report/:agentId", auth, h.forensicReport)
	api.Route(http.MethodPost, "/premium/bulk-verify", auth, h.bulkVerify)
}

// storeErr maps a failed read: 503 when the database is unavailable,
// otherwise internal (logged by the app, answered without detail).
func storeErr(err error) error {
	if store.IsUnavailable(err) {
		return apierror.Unavailable("the database is unavailable; try again shortly")
	}
	return err
}

// loadErr is storeErr for cache loaders: a missing record becomes
// cache.ErrNotFound so the cache keeps the answer for the epoch.
func loadErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return cache.ErrNotFound
	}
	return storeErr(err)
}

// ConfigFromEnv reads the premium tunables with getenv:
//
//	ATTESTD_REPORT_BURST_PER_MINUTE  attestations in one UTC minute that make a burst (default 500)
//	ATTESTD_REPORT_LONG_GAP          silence between two attestations that is a long gap (default 24h)
//	ATTESTD_REPORT_MAX_ANOMALIES     anomalies listed per kind (default 100)
//	ATTESTD_REPORT_RECHECK           newest attestations re-verified per report (default 1000, max 10000)
//	ATTESTD_VERIFY_MEMO_ENTRIES      in-process memo of signature checks (default 200000; 0 disables)
func ConfigFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	intVar := func(name string, lo, hi int, dst *int) {
		v := get(name)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s: want a whole number %d..%d, got %q", name, lo, hi, v))
			return
		}
		*dst = n
	}
	intVar("ATTESTD_REPORT_BURST_PER_MINUTE", 1, 1_000_000, &o.Rules.BurstPerMinute)
	intVar("ATTESTD_REPORT_MAX_ANOMALIES", 1, 10_000, &o.Rules.MaxAnomaliesPerKind)
	intVar("ATTESTD_REPORT_RECHECK", 1, 10_000, &o.Rules.RecheckNewest)
	if v := get("ATTESTD_REPORT_LONG_GAP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			errs = append(errs, fmt.Errorf("ATTESTD_REPORT_LONG_GAP: want a duration of at least 1m such as 24h, got %q", v))
		} else {
			o.Rules.LongGapSeconds = int64(d / time.Second)
		}
	}
	memo := -2
	intVar("ATTESTD_VERIFY_MEMO_ENTRIES", 0, 10_000_000, &memo)
	switch memo {
	case -2: // unset: default
	case 0:
		o.MemoEntries = -1
	default:
		o.MemoEntries = memo
	}
	return o, errors.Join(errs...)
}
