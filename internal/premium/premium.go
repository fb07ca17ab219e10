package premium

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/httpapi"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402/x402fiber"
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

// DefaultRules are the thresholds used when Config.Rules is zero.
var DefaultRules = Rules{BurstPerMinute: 500, LongGapSeconds: 86400, MaxAnomaliesPerKind: 100, RecheckNewest: 1000}

// Limits of GET /premium/full-history.
const (
	HistoryDefaultLimit = 1000
	HistoryMaxLimit     = 1000
	DefaultMemoEntries  = 200_000
)

// Config holds the premium routes' tunables, read from settings (Vars).
type Config struct {
	Rules Rules // zero fields take DefaultRules
	// MemoEntries bounds the in-process memo of signature checks (default
	// 200,000, about 20 MB; -1 disables it).
	MemoEntries int
}

// Deps are what the premium routes work with: their Config, and their
// connections.
type Deps struct {
	Config              // the tunables, from settings
	Store  *store.Store // required
	Cache  *cache.Cache // required
	Logger *slog.Logger
	// Auth is the API-key middleware, with its pay-per-request seam, every
	// route is behind; required by Routes.
	Auth fiber.Handler
	Now  func() time.Time
}

// Handler serves the premium routes.
type Handler struct {
	store    *store.Store
	cache    *cache.Cache
	log      *slog.Logger
	now      func() time.Time
	auth     fiber.Handler // Deps.Auth
	rules    Rules
	rulesKey string
	verifier *verifier
}

// New makes the premium handlers.
func New(opt Deps) (*Handler, error) {
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
	return &Handler{store: opt.Store, cache: opt.Cache, log: opt.Logger, now: opt.Now, auth: opt.Auth, rules: r,
		rulesKey: fmt.Sprintf("%d.%d.%d.%d", r.BurstPerMinute, r.LongGapSeconds, r.MaxAnomaliesPerKind, r.RecheckNewest),
		verifier: newVerifier(memo)}, nil
}

// Rules returns the thresholds in effect.
func (h *Handler) Rules() Rules { return h.rules }

// Routes adds the three premium routes, each behind Deps.Auth (the
// API-key middleware, with its pay-per-request seam). Each route's
// validation is recorded first so a payment is never taken for an invalid
// request.
func (h *Handler) Routes(r httpapi.Router) {
	auth := h.auth
	if auth == nil {
		panic("premium: Routes needs Deps.Auth, the API-key middleware")
	}
	r.Route(http.MethodGet, "/premium/full-history/:agentId", x402fiber.Validate(validateHistory), auth, h.fullHistory)
	r.Route(http.MethodGet, "/premium/forensic-report/:agentId", x402fiber.Validate(validateReport), auth, h.forensicReport)
	r.Route(http.MethodPost, "/premium/bulk-verify", x402fiber.Validate(validateBulk), auth, h.bulkVerify)
}

// validateHistory checks a full-history request as its handler will.
func validateHistory(c *fiber.Ctx) error {
	_, err := parseHistoryQuery(c)
	return err
}

// validateReport checks a forensic-report request as its handler will.
func validateReport(c *fiber.Ctx) error {
	_, _, err := parseReportQuery(c)
	return err
}

// validateBulk checks a bulk-verify request as its handler will.
func validateBulk(c *fiber.Ctx) error {
	_, err := parseBulkVerify(c)
	return err
}

// Vars lists the variables ConfigFromEnv reads.
var Vars = []config.Var{
	{Name: "ATTESTD_REPORT_BURST_PER_MINUTE", Default: "500", Help: "forensic report: attestations in one UTC minute that make a burst"},
	{Name: "ATTESTD_REPORT_LONG_GAP", Default: "24h", Help: "forensic report: silence that counts as a long gap"},
	{Name: "ATTESTD_REPORT_MAX_ANOMALIES", Default: "100", Help: "forensic report: anomalies listed per kind"},
	{Name: "ATTESTD_REPORT_RECHECK", Default: "1000", Help: "forensic report: newest attestations whose signatures are re-verified (max 10,000)"},
	{Name: "ATTESTD_VERIFY_MEMO_ENTRIES", Default: "200000", Help: "in-process memo of signature checks; 0 disables"},
}

// ConfigFromEnv reads the premium tunables (Vars) with getenv; unset ones
// keep their zero value, which New turns into the defaults.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := config.NewEnv(getenv)
	o := Config{Rules: Rules{
		BurstPerMinute:      e.Int("ATTESTD_REPORT_BURST_PER_MINUTE", 0, 1, 1_000_000),
		MaxAnomaliesPerKind: e.Int("ATTESTD_REPORT_MAX_ANOMALIES", 0, 1, 10_000),
		RecheckNewest:       e.Int("ATTESTD_REPORT_RECHECK", 0, 1, 10_000),
		LongGapSeconds:      int64(e.Duration("ATTESTD_REPORT_LONG_GAP", 0, time.Minute, 365*24*time.Hour) / time.Second),
	}}
	switch memo := e.Int("ATTESTD_VERIFY_MEMO_ENTRIES", -1, 0, 10_000_000); memo {
	case -1: // unset: the default
	case 0:
		o.MemoEntries = -1
	default:
		o.MemoEntries = memo
	}
	return o, e.Err()
}
