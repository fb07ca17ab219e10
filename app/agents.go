package app

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/excerpt"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
)

// GET /agents: agents, the most recently active first, paged like
// /attestations (limit, offset, cursor).

type agentListBody struct {
	Data       []store.AgentItem  `json:"data"`
	Pagination httpapi.Pagination `json:"pagination"`
}

var agentListParams = []string{"limit", "offset", "cursor", "operator"}

// EncodeAgentCursor makes the opaque nextCursor of an agents page.
func EncodeAgentCursor(c *store.AgentCursor) string {
	raw := "a." + strconv.FormatInt(c.ActivityAt.UnixMicro(), 10) + "." + c.PDA
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeAgentCursor parses a cursor EncodeAgentCursor made (400 otherwise).
func DecodeAgentCursor(s string) (*store.AgentCursor, error) {
	bad := apierror.Invalid("cursor is not one this API issued for /agents; pass pagination.nextCursor unchanged")
	if len(s) > 128 {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	parts := strings.SplitN(string(raw), ".", 3)
	if len(parts) != 3 || parts[0] != "a" {
		return nil, bad
	}
	us, err := strconv.ParseInt(parts[1], 10, 64)
	// Instants the API accepts elsewhere: years 0001 to 9999.
	if err != nil || us < httpapi.MinTime.UnixMicro() || us > httpapi.MaxTime.UnixMicro() {
		return nil, bad
	}
	if _, err := attestation.ParseAddress(parts[2]); err != nil {
		return nil, bad
	}
	return &store.AgentCursor{ActivityAt: time.UnixMicro(us).UTC(), PDA: parts[2]}, nil
}

type agentListQuery struct {
	filter store.AgentFilter
	cursor string
}

func parseAgentListQuery(c *fiber.Ctx) (agentListQuery, error) {
	var q agentListQuery
	p, err := httpapi.CheckQuery(c, agentListParams)
	if err != nil {
		return q, err
	}
	if q.filter.Limit, q.filter.Offset, q.cursor, q.filter.After, err = httpapi.ParsePage(p, DecodeAgentCursor); err != nil {
		return q, err
	}
	if v, ok := p.Get(3); ok {
		q.filter.Operator, err = httpapi.ParseAddress("operator", string(v))
	}
	return q, err
}

// cacheKey is an injective encoding of the normalised query ("": no
// operator; an address is never empty).
func (q agentListQuery) cacheKey() cache.Key {
	return cache.NewKey("agents").Int(int64(q.filter.Limit)).Int(int64(q.filter.Offset)).String(q.cursor).String(q.filter.Operator)
}

func (a *API) listAgents(c *fiber.Ctx) error {
	q, err := parseAgentListQuery(c)
	if err != nil {
		return err
	}
	how := cacheable{control: a.control.index, general: httpcache.KeyAgents}
	return a.cached(c, q.cacheKey().Bytes(), how, func(ctx context.Context) (any, bool, error) {
		page, err := a.deps.Store.ListAgents(ctx, q.filter)
		if err != nil {
			return nil, false, err
		}
		body := agentListBody{Data: page.Items, Pagination: httpapi.Pagination{Limit: q.filter.Limit, Offset: q.filter.Offset, Total: page.Total}}
		if body.Data == nil {
			body.Data = []store.AgentItem{}
		}
		if page.Next != nil {
			body.Pagination.NextCursor = EncodeAgentCursor(page.Next)
		}
		return body, false, nil
	})
}

// Activity series: GET /stats/activity and GET /agents/:agentId/activity.

// Bounds of an activity series: at most this span per bucket size.
const (
	MaxHourSpan = 31 * 24 * time.Hour   // 744 hourly buckets
	MaxDaySpan  = 3660 * 24 * time.Hour // 3660 daily buckets (about ten years)
)

var activityParams = []string{"bucket", "from", "to"}

type activityQuery struct {
	bucket   string
	from, to time.Time
	fromSet  bool
}

// parseActivityQuery reads bucket (hour|day, default hour), from and to
// (RFC 3339 or YYYY-MM-DD). to defaults to now; from to a day before to
// (hour) or the first activity (day, resolved by the caller). Both are
// widened to bucket bounds (from down, to up).
func parseActivityQuery(c *fiber.Ctx, now time.Time) (activityQuery, error) {
	var q activityQuery
	p, err := httpapi.CheckQuery(c, activityParams)
	if err != nil {
		return q, err
	}
	q.bucket = store.BucketHour
	if v, ok := p.Get(0); ok {
		switch string(v) {
		case store.BucketHour, store.BucketDay:
			q.bucket = string(v)
		default:
			return q, apierror.Invalid("bucket must be hour or day, got %q", excerpt.Of(string(v), httpapi.MaxEcho))
		}
	}
	step := q.step()
	q.to = ceilTo(now.UTC(), step)
	if v, ok := p.Get(2); ok {
		t, err := httpapi.ParseTime("to", string(v))
		if err != nil {
			return q, err
		}
		q.to = ceilTo(t.UTC(), step)
	}
	// A bucket ending after 9999-12-31T23:59:59Z has an end no RFC 3339
	// instant writes ("10000-01-01..."): the series stops before it.
	if q.to.After(httpapi.MaxTime) {
		q.to = httpapi.MaxTime.Truncate(step)
	}
	if v, ok := p.Get(1); ok {
		t, err := httpapi.ParseTime("from", string(v))
		if err != nil {
			return q, err
		}
		q.from, q.fromSet = t.UTC().Truncate(step), true
		if !q.from.Before(q.to) {
			return q, apierror.Invalid("from must be before to")
		}
	} else if q.bucket == store.BucketHour {
		q.from, q.fromSet = q.to.Add(-24*time.Hour), true
	}
	q.from = clampFrom(q.from)
	if q.fromSet && q.to.Sub(q.from) > q.maxSpan() {
		return q, apierror.Invalid("the range from %s to %s is longer than %d %ss; narrow it or use bucket=day",
			q.from.Format(time.RFC3339), q.to.Format(time.RFC3339), int(q.maxSpan()/step), q.bucket)
	}
	return q, nil
}

func (q activityQuery) step() time.Duration {
	if q.bucket == store.BucketDay {
		return 24 * time.Hour
	}
	return time.Hour
}

func (q activityQuery) maxSpan() time.Duration {
	if q.bucket == store.BucketDay {
		return MaxDaySpan
	}
	return MaxHourSpan
}

// clampFrom keeps a derived from (to less a default span) from starting
// before year 0001, which no RFC 3339 instant writes (the mirror of the
// to clamp above).
func clampFrom(t time.Time) time.Time {
	if t.Before(httpapi.MinTime) {
		return httpapi.MinTime
	}
	return t
}

// ceilTo rounds t up to a multiple of step (UTC; step divides a day).
func ceilTo(t time.Time, step time.Duration) time.Time {
	f := t.Truncate(step)
	if f.Equal(t) {
		return f
	}
	return f.Add(step)
}

// resolveFrom sets from, when it was left open, to the first bucket with
// activity (within the bucket's longest span before to; one bucket when
// there is none).
func (a *API) resolveFrom(ctx context.Context, q *activityQuery, agent string) error {
	if q.fromSet {
		return nil
	}
	step := q.step()
	q.from = q.to.Add(-step)
	first, ok, err := a.deps.Store.FirstActivity(ctx, agent)
	if err != nil {
		return err
	}
	if ok && first.Before(q.from) {
		q.from = first.UTC().Truncate(step)
	}
	if q.to.Sub(q.from) > q.maxSpan() {
		q.from = q.to.Add(-q.maxSpan())
	}
	q.from, q.fromSet = clampFrom(q.from), true
	return nil
}

// cacheKey names the series as asked: an open from (resolved by the
// loader) is absent from the key, so a hit costs no database read.
func (q activityQuery) cacheKey(kind, agent string) cache.Key {
	k := cache.NewKey(kind).String(agent).String(q.bucket)
	if q.fromSet {
		k = k.Int(q.from.Unix())
	} else {
		k = k.Absent()
	}
	return k.Int(q.to.Unix())
}

func (a *API) globalActivity(c *fiber.Ctx) error {
	q, err := parseActivityQuery(c, a.deps.Now())
	if err != nil {
		return err
	}
	how := cacheable{control: a.control.index, general: httpcache.KeyStats}
	return a.cached(c, q.cacheKey("activity", "").Bytes(), how, func(ctx context.Context) (any, bool, error) {
		if err := a.resolveFrom(ctx, &q, ""); err != nil {
			return nil, false, err
		}
		act, err := a.deps.Store.GetActivity(ctx, "", q.bucket, q.from, q.to)
		return dataBody{Data: act}, false, err
	})
}

func (a *API) agentActivity(c *fiber.Ctx) error {
	q, err := parseActivityQuery(c, a.deps.Now())
	if err != nil {
		return err
	}
	id, err := httpapi.ParseAddress("agentId", c.Params("agentId"))
	if err != nil {
		return err
	}
	how := agentCaching(a, id, false)
	v, err := a.load(c, q.cacheKey("agent-activity", id).Key(), func(ctx context.Context) (any, bool, error) {
		if err := a.resolveFrom(ctx, &q, id); err != nil {
			return nil, false, err
		}
		act, err := a.deps.Store.GetActivity(ctx, id, q.bucket, q.from, q.to)
		return dataBody{Data: act}, false, err
	})
	if errors.Is(err, cache.ErrNotFound) {
		return agentNotFound(id)
	}
	if err != nil {
		return err
	}
	return sendCacheable(c, v, how)
}

// GET /samples: published sample payloads (see store.PublishSamples).

var sampleParams = []string{"actionHash", "limit"}

func (a *API) listSamples(c *fiber.Ctx) error {
	p, err := httpapi.CheckQuery(c, sampleParams)
	if err != nil {
		return err
	}
	var hash []byte
	hashText := ""
	if v, ok := p.Get(0); ok {
		if len(v) != 64 || strings.ToLower(string(v)) != string(v) {
			return apierror.Invalid("actionHash must be 64 lowercase hexadecimal characters")
		}
		if hash, err = hex.DecodeString(string(v)); err != nil {
			return apierror.Invalid("actionHash must be 64 lowercase hexadecimal characters")
		}
		hashText = string(v)
	}
	v, ok := p.Get(1)
	limit, err := httpapi.ParseLimit(v, ok, httpapi.DefaultLimit, httpapi.MaxLimit)
	if err != nil {
		return err
	}
	key := cache.NewKey("samples").String(hashText).Int(int64(limit))
	how := cacheable{control: a.control.index, general: httpcache.KeyStats}
	return a.cached(c, key.Bytes(), how, func(ctx context.Context) (any, bool, error) {
		s, err := a.deps.Store.Samples(ctx, hash, limit)
		return dataBody{Data: s}, false, err
	})
}
