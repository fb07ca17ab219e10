package premium

import (
	"context"
	"errors"
	"fmt"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/errgroup"
)

type historyBody struct {
	Data       []attestation.Attestation `json:"data"`
	Agent      attestation.Agent         `json:"agent"`
	Pagination httpapi.Pagination        `json:"pagination"`
}

// historyQuery is a parsed full-history request.
type historyQuery struct {
	filter store.Filter
	cursor string
}

func parseHistoryQuery(c *fiber.Ctx) (historyQuery, error) {
	var q historyQuery
	id, err := httpapi.ParseAddress("agentId", c.Params("agentId"))
	if err != nil {
		return q, err
	}
	q.filter.AgentPDA = id
	p, err := httpapi.QueryParams(c, "limit", "offset", "cursor", "from", "to")
	if err != nil {
		return q, err
	}
	if q.filter.Limit, q.filter.Offset, err = httpapi.LimitOffset(p, HistoryDefaultLimit, HistoryMaxLimit, httpapi.MaxOffset); err != nil {
		return q, err
	}
	if v, ok := p["cursor"]; ok {
		if q.filter.Offset != 0 {
			return q, apierror.Invalid("use either cursor or offset, not both")
		}
		if q.filter.After, err = httpapi.DecodeCursor(v); err != nil {
			return q, err
		}
		q.cursor = v
	}
	q.filter.Range, err = httpapi.ParseRange(p)
	return q, err
}

func (q historyQuery) cacheKey() string {
	f := q.filter
	return cache.NewKey("full-history").String(f.AgentPDA).Range(f.Range).
		Int(int64(f.Limit)).Int(int64(f.Offset)).String(q.cursor).Key()
}

// fullHistory answers GET /premium/full-history/:agentId: up to 1000
// attestations of the agent, newest first, with the agent and pagination.
func (h *Handler) fullHistory(c *fiber.Ctx) error {
	q, err := parseHistoryQuery(c)
	if err != nil {
		return err
	}
	v, _, err := h.cache.GetValue(c.UserContext(), q.cacheKey(), func(ctx context.Context) ([]byte, bool, error) {
		body, err := h.loadHistory(ctx, q.filter)
		if err != nil {
			return nil, false, httpapi.LoadError(err)
		}
		b, err := httpapi.Marshal(body)
		if err != nil {
			return nil, false, fmt.Errorf("encode full history: %w", err)
		}
		return b, false, nil
	})
	if errors.Is(err, cache.ErrNotFound) {
		return apierror.NotFound(apierror.CodeAgentNotFound, "no agent with pda %s", q.filter.AgentPDA)
	}
	if err != nil {
		return err
	}
	return httpapi.SendValue(c, v)
}

// loadHistory reads the agent and the page concurrently.
func (h *Handler) loadHistory(ctx context.Context, f store.Filter) (historyBody, error) {
	var body historyBody
	var page store.Page
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		body.Agent, err = h.store.GetAgent(gctx, f.AgentPDA, h.now())
		return err
	})
	g.Go(func() error {
		var err error
		page, err = h.store.ListAttestations(gctx, f)
		return err
	})
	if err := g.Wait(); err != nil {
		return body, err
	}
	body.Data = page.Items
	if body.Data == nil {
		body.Data = []attestation.Attestation{}
	}
	body.Pagination = httpapi.Pagination{Limit: f.Limit, Offset: f.Offset, Total: page.Total}
	if page.Next != nil {
		body.Pagination.NextCursor = httpapi.EncodeCursor(page.Next)
	}
	return body, nil
}
