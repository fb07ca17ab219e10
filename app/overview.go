package app

import (
	"context"
	"math"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog/logreport"
	"github.com/gofiber/fiber/v2"
)

// GET /stats/overview: what is happening now, in one cacheable answer
// (the web application's home page reads it).

// Overview is the body of GET /stats/overview.
type Overview struct {
	// At is the instant the figures were read (cached answers keep it: at
	// most a cache lifetime old).
	At              attestation.Time `json:"at"`
	Agents          int64            `json:"agents"`
	Attestations    int64            `json:"attestations"`
	ActiveAgents24h int64            `json:"activeAgents24h"`
	Rate            OverviewRate     `json:"rate"`
	TopAgents24h    []store.TopAgent `json:"topAgents24h"`
	Finality        OverviewFinality `json:"finality"`
	// Indexer is the indexer's progress as /health reports it; null when
	// it cannot be read now.
	Indexer *IndexerStatus `json:"indexer"`
	// Log is the transparency log's latest checkpoint; null when the log
	// is off or has none yet.
	Log *logreport.Status `json:"log"`
}

// OverviewRate is how fast the index grows: over the recent window and
// over the last 24 hours.
type OverviewRate struct {
	WindowSeconds int64   `json:"windowSeconds"`
	LastWindow    int64   `json:"lastWindow"`
	PerMinuteNow  float64 `json:"perMinuteNow"`
	Last24h       int64   `json:"last24h"`
	PerMinute24h  float64 `json:"perMinute24h"`
}

// OverviewFinality says how far finality trails the index.
type OverviewFinality struct {
	Unfinalized         int64             `json:"unfinalized"`
	OldestUnfinalizedAt *attestation.Time `json:"oldestUnfinalizedAt"`
}

// LogStatusFunc reports the log's latest checkpoint, and false when there
// is none to report (the log is off, or nothing is signed yet).
type LogStatusFunc func(ctx context.Context) (logreport.Status, bool)

// overviewKey is the cache key of GET /stats/overview (no parameters).
var overviewKey = cache.NewKey("overview").Bytes()

// perMinute is n per minute over d, to one decimal.
func perMinute(n int64, d time.Duration) float64 {
	return math.Round(float64(n)/d.Minutes()*10) / 10
}

func (a *API) overview(c *fiber.Ctx) error {
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	how := cacheable{control: a.control.index, general: httpcache.KeyStats}
	return a.cached(c, overviewKey, how, func(ctx context.Context) (any, bool, error) {
		now := a.deps.Now().UTC().Truncate(time.Second)
		o, err := a.deps.Store.Overview(ctx, now)
		if err != nil {
			return nil, false, err
		}
		body := Overview{At: attestation.At(now), Agents: o.Agents, Attestations: o.Attestations, ActiveAgents24h: o.ActiveAgents24h,
			Rate: OverviewRate{WindowSeconds: int64(store.RecentWindow / time.Second), LastWindow: o.LastRecent,
				PerMinuteNow: perMinute(o.LastRecent, store.RecentWindow), Last24h: o.Last24h, PerMinute24h: perMinute(o.Last24h, 24*time.Hour)},
			TopAgents24h: o.TopAgents,
			Finality:     OverviewFinality{Unfinalized: o.Unfinalized, OldestUnfinalizedAt: attestation.OptTime(o.OldestUnfinalized)}}
		// The indexer and the log are read within a second each: a slow
		// chain RPC or log read leaves them null rather than delay the page.
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		indexer := a.deps.Indexer
		if indexer == nil {
			indexer = a.defaultIndexerStatus
		}
		if st, err := indexer(sctx); err == nil {
			body.Indexer = &st
		}
		if f := a.deps.LogStatus; f != nil {
			if ls, ok := f(sctx); ok {
				body.Log = &ls
			}
		}
		return dataBody{Data: body}, false, nil
	})
}
