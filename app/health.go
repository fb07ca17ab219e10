package app

import (
	"context"
	"net/http"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/gofiber/fiber/v2"
)

// IndexerStatus is the indexer's progress as /health reports it.
type IndexerStatus struct {
	LastIndexedSlot uint64            `json:"lastIndexedSlot"`
	ChainSlot       uint64            `json:"chainSlot"`
	LagSlots        uint64            `json:"lagSlots"`
	LastIndexedAt   *attestation.Time `json:"lastIndexedAt"`
	Synced          bool              `json:"synced"`
}

// ChainStatus is the chain connection as /health reports it.
type ChainStatus struct {
	RPC       string `json:"rpc"`
	Reachable bool   `json:"reachable"`
}

// IndexerStatusFunc reports the indexer's progress.
type IndexerStatusFunc func(ctx context.Context) (IndexerStatus, error)

// ChainStatusFunc reports whether the chain RPC answers.
type ChainStatusFunc func(ctx context.Context) ChainStatus

// Health is the body of GET /health.
type Health struct {
	Status        string        `json:"status"`
	Version       string        `json:"version"`
	UptimeSeconds int64         `json:"uptimeSeconds"`
	Postgres      string        `json:"postgres"`
	Redis         string        `json:"redis"`
	Indexer       IndexerStatus `json:"indexer"`
	Chain         ChainStatus   `json:"chain"`
}

// IndexerCheckpoint is the checkpoint name the indexer writes.
const IndexerCheckpoint = "indexer"

func (a *API) defaultIndexerStatus(ctx context.Context) (IndexerStatus, error) {
	cp, ok, err := a.deps.Store.Checkpoint(ctx, IndexerCheckpoint)
	if err != nil || !ok {
		return IndexerStatus{}, err
	}
	st := IndexerStatus{LastIndexedSlot: cp.Slot}
	if !cp.UpdatedAt.IsZero() {
		st.LastIndexedAt = attestation.OptTime(&cp.UpdatedAt)
	}
	return st, nil
}

func (a *API) health(c *fiber.Ctx) error {
	if _, err := QueryParams(c); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	h := Health{Status: "ok", Version: buildinfo.Version, UptimeSeconds: int64(time.Since(a.started).Seconds()),
		Postgres: "ok", Redis: "ok"}
	pgUp := a.deps.Store.Ping(ctx) == nil
	if !pgUp {
		h.Postgres = "down"
	}
	redisUp := !a.deps.Cache.Degraded()
	if !redisUp {
		h.Redis = "down"
	}
	degraded := false
	for _, d := range a.deps.Degraded {
		degraded = degraded || d()
	}
	indexer := a.deps.Indexer
	if indexer == nil {
		indexer = a.defaultIndexerStatus
	}
	if pgUp {
		if st, err := indexer(ctx); err == nil {
			h.Indexer = st
		}
	}
	if a.deps.Chain != nil {
		h.Chain = a.deps.Chain(ctx)
	}
	status := http.StatusOK
	switch {
	case !pgUp && !redisUp:
		h.Status, status = "down", http.StatusServiceUnavailable
	case !pgUp || !redisUp || degraded:
		h.Status = "degraded"
	}
	c.Set(fiber.HeaderCacheControl, httpcache.NoStore)
	return c.Status(status).JSON(h)
}

// openAPIControl: the document changes only with a release.
const openAPIControl = "public, max-age=300"

func (a *API) openAPI(c *fiber.Ctx) error {
	if a.docErr != nil {
		return a.docErr
	}
	return sendCacheable(c, a.doc, cacheable{control: openAPIControl, general: httpcache.KeyOpenAPI})
}
