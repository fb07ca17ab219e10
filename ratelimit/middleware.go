package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/gofiber/fiber/v2"
)

// Response headers of a limited request.
const (
	HeaderLimit      = "RateLimit-Limit"
	HeaderRemaining  = "RateLimit-Remaining"
	HeaderReset      = "RateLimit-Reset"
	HeaderRetryAfter = "Retry-After"
)

// Middleware limits every request by client IP (see IPResolver). It sets
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds until
// a slot frees, rounded up) on every limited response, and answers 429
// RATE_LIMITED with Retry-After (seconds, rounded up) beyond the limit.
// Allowlisted clients pass without headers. With Limit 0 it does nothing.
func (l *Limiter) Middleware() fiber.Handler {
	if l.cfg.Limit == 0 {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	prefixLen := len(l.cfg.KeyPrefix)
	return func(c *fiber.Ctx) error {
		if inprocess.Is(c.Context()) {
			// A request the node makes of itself for a client (a remote
			// MCP tool call's reads): the client's own request to the
			// node was counted already.
			return c.Next()
		}
		ip := l.resolver.ClientIP(c)
		if len(l.cfg.Allowlist) > 0 && containsAddr(l.cfg.Allowlist, ip) {
			return c.Next()
		}
		var buf [128]byte
		redisKey := string(appendClientKey(append(buf[:0], l.cfg.KeyPrefix...), ip))
		key := redisKey[prefixLen:]
		d, err := l.allow(c.UserContext(), key, redisKey)
		if err != nil {
			d = l.localAllow(key) // closed or cancelled: never unlimited
		}
		h := &c.Response().Header
		var num [20]byte
		h.SetBytesV(HeaderLimit, l.limitBytes)
		h.SetBytesV(HeaderRemaining, strconv.AppendInt(num[:0], int64(d.Remaining), 10))
		h.SetBytesV(HeaderReset, strconv.AppendInt(num[:0], ceilSeconds(d.Reset), 10))
		if d.Allowed {
			return c.Next()
		}
		retry := ceilSeconds(d.RetryAfter)
		h.SetBytesV(HeaderRetryAfter, strconv.AppendInt(num[:0], retry, 10))
		return apierror.Write(c, http.StatusTooManyRequests, apierror.CodeRateLimited,
			fmt.Sprintf("rate limit exceeded: at most %d requests per %s per client; retry in %d s",
				l.cfg.Limit, humanDuration(l.cfg.Window), retry))
	}
}

// ceilSeconds rounds d up to whole seconds (never below 0).
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func humanDuration(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "minute"
	case d == time.Second:
		return "second"
	case d == time.Hour:
		return "hour"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " hours"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " minutes"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " seconds"
	}
	return d.String()
}
