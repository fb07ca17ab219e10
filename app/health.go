package app

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/buildinfo"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/translog/logreport"
	"github.com/gofiber/fiber/v2"
)

// IndexerStatus is the indexer's progress as /health reports it.
type IndexerStatus struct {
	LastIndexedSlot uint64            `json:"lastIndexedSlot"`
	ChainSlot       uint64            `json:"chainSlot"`
	LagSlots        uint64            `json:"lagSlots"`
	LastIndexedAt   *attestation.Time `json:"lastIndexedAt"`
	Synced          bool              `json:"synced"`
	// NotSynced says why Synced is false, for /health's reasons (not shown
	// as a field).
	NotSynced string `json:"-"`
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
	Status        string `json:"status"`
	Version       string `json:"version"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	Postgres      string `json:"postgres"`
	Redis         string `json:"redis"`
	// Cache is "full" while the read cache refuses writes to Redis (its
	// budget spent, or Redis out of memory): answers are still served.
	Cache   string        `json:"cache"`
	Indexer IndexerStatus `json:"indexer"`
	Chain   ChainStatus   `json:"chain"`
	// Reasons says, one sentence each, why the status is not ok (empty
	// when it is): a store down, the chain unreachable, the indexer behind.
	Reasons  []string  `json:"reasons"`
	Replicas []Replica `json:"replicas"`
	// Log is the transparency log's state (absent when the node serves
	// none): what it serves and who witnessed it.
	Log *logreport.Health `json:"log,omitempty"`
}

// LogHealthFunc reports the log's state and, when something is wrong,
// why (a sentence for /health's reasons).
type LogHealthFunc func(ctx context.Context) (*logreport.Health, string)

// Degradation is a feature that can run in a fallback mode, and the reason
// /health gives while it does.
type Degradation struct {
	Reason string      // e.g. "rate limit: decided on each node alone while Redis is slow"
	Active func() bool // reports whether the fallback is in use now
}

// Replica is one read replica as /health reports it: by its position in
// DATABASE_READ_URLS, never by its address (that is for /metrics, on the
// internal listener).
type Replica struct {
	Index      int      `json:"index"`
	Status     string   `json:"status"`
	LagSeconds *float64 `json:"lagSeconds"`
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
	if _, err := httpapi.QueryParams(c); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	h := Health{Status: "ok", Version: buildinfo.Version, UptimeSeconds: int64(time.Since(a.started).Seconds()),
		Postgres: "ok", Redis: "ok", Cache: "ok", Reasons: []string{}}
	pgUp := a.deps.Store.Ping(ctx) == nil
	if !pgUp {
		h.Postgres = "down"
		h.Reasons = append(h.Reasons, "postgres: down; only cached answers are served")
	}
	redisUp := !a.deps.Cache.Degraded()
	if !redisUp {
		h.Redis = "down"
		h.Reasons = append(h.Reasons, "redis: down; reads go to PostgreSQL")
	}
	if a.deps.Cache.Full() {
		h.Cache = "full"
	}
	for _, d := range a.deps.Degradations {
		if d.Active() {
			h.Reasons = append(h.Reasons, d.Reason)
		}
	}
	// The indexer and the chain are judged only when the node was given a
	// way to know them (a serving node always is): data may then be stale.
	if pgUp {
		a.healthOfIndexer(ctx, &h)
	}
	if a.deps.Chain != nil {
		a.healthOfChain(ctx, &h)
	}
	if a.deps.Log != nil && pgUp {
		lh, why := a.deps.Log(ctx)
		h.Log = lh
		if why != "" {
			h.Reasons = append(h.Reasons, why)
		}
	}
	a.healthOfReplicas(&h)
	status := http.StatusOK
	switch {
	case a.draining.Load():
		// First, so load balancers that probe /health take the node out
		// while it still answers what they send meanwhile.
		h.Status, status = "draining", http.StatusServiceUnavailable
		h.Reasons = append([]string{"draining: this node is shutting down and still answers; send new requests to the other nodes"}, h.Reasons...)
	case !pgUp && !redisUp:
		h.Status, status = "down", http.StatusServiceUnavailable
	case len(h.Reasons) > 0:
		h.Status = "degraded"
	}
	c.Set(fiber.HeaderCacheControl, httpcache.NoStore)
	return c.Status(status).JSON(h)
}

// healthOfIndexer puts the indexer's progress into h, with a reason when
// a node given a way to know it finds it unreadable or not synced.
func (a *API) healthOfIndexer(ctx context.Context, h *Health) {
	indexer := a.deps.Indexer
	if indexer == nil {
		indexer = a.defaultIndexerStatus
	}
	st, err := indexer(ctx)
	switch {
	case err != nil && a.deps.Indexer != nil:
		h.Reasons = append(h.Reasons, "indexer: its progress cannot be read now; data may be stale")
	case err == nil:
		h.Indexer = st
		if a.deps.Indexer != nil && !st.Synced {
			why := st.NotSynced
			if why == "" {
				why = "not synced with the chain"
			}
			h.Reasons = append(h.Reasons, "indexer: "+why+"; data may be stale")
		}
	}
}

// healthOfChain puts the chain's state into h, with a reason when its
// RPC node does not answer.
func (a *API) healthOfChain(ctx context.Context, h *Health) {
	h.Chain = a.deps.Chain(ctx)
	if !h.Chain.Reachable {
		rpc := h.Chain.RPC
		if rpc == "" {
			rpc = "the RPC node"
		}
		h.Reasons = append(h.Reasons, "chain: "+rpc+" does not answer getHealth with ok; new attestations are not indexed")
	}
}

// healthOfReplicas lists the read replicas in h, with a reason for each
// one not ok.
func (a *API) healthOfReplicas(h *Health) {
	h.Replicas = []Replica{}
	for i, r := range a.deps.Store.Replicas() {
		rep := Replica{Index: i + 1, Status: r.Status}
		if r.LagSeconds >= 0 {
			lag := math.Round(r.LagSeconds*1000) / 1000
			rep.LagSeconds = &lag
		}
		if r.Status != "ok" {
			h.Reasons = append(h.Reasons, fmt.Sprintf("replica %d: %s; its reads go to the primary", i+1, strings.ReplaceAll(r.Status, "_", " ")))
		}
		h.Replicas = append(h.Replicas, rep)
	}
}

// openAPIControl: the document changes only with a release.
var openAPIControl = []byte("public, max-age=300")

func (a *API) openAPI(c *fiber.Ctx) error {
	if a.docErr != nil {
		return a.docErr
	}
	return sendCacheable(c, a.doc, cacheable{control: openAPIControl, general: httpcache.KeyOpenAPI})
}
