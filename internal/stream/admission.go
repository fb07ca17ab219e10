package stream

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/attestd/attestd/internal/apierror"
	"github.com/gofiber/fiber/v2"
)

// clientKey is the prefix a client's streams are counted by: its IPv4
// address, or its IPv6 /64.
func clientKey(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// acquire takes a slot of the node and one of the client's.
func (h *Handler) acquire(c *fiber.Ctx, key netip.Prefix) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open >= h.cfg.MaxStreams {
		h.m.refused.WithLabelValues("node").Inc()
		c.Set(fiber.HeaderRetryAfter, "5")
		return apierror.Unavailable("this node holds the most streams it allows; retry shortly")
	}
	if h.perIP[key] >= h.cfg.MaxPerIP {
		h.m.refused.WithLabelValues("per_ip").Inc()
		c.Set(fiber.HeaderRetryAfter, "5")
		return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
			"your address holds %d open streams, the most allowed; close one (one stream carries every filter's events: filter on the client)", h.cfg.MaxPerIP)
	}
	h.open++
	h.perIP[key]++
	return nil
}

func (h *Handler) release(key netip.Prefix) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open--
	if h.perIP[key]--; h.perIP[key] <= 0 {
		delete(h.perIP, key)
	}
}

// startSlot takes one of the node's PostgreSQL read slots to start a
// stream (the catch-ups share them): a fleet of clients reconnecting at
// once queues here, at most five seconds. The caller gives it back.
func (h *Handler) startSlot(c *fiber.Ctx) error {
	select {
	case h.hub.catchUp <- struct{}{}:
		return nil
	case <-time.After(5 * time.Second):
		c.Set(fiber.HeaderRetryAfter, "2")
		return apierror.Unavailable("too many streams are starting on this node; retry shortly")
	}
}
