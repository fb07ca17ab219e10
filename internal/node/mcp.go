package node

import (
	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/inprocess"
	"github.com/attestd/attestd/internal/mcp"
	"github.com/gofiber/fiber/v2"
)

// remoteMCP serves the MCP tools at /mcp on the node's own listener: the
// tools read the node's API in process (its cache, limits, payments and
// receipts), each call as its caller. Off (the route answers 503) without
// a public origin, which Host and Origin are checked against.
func (n *node) remoteMCP(api *app.API) error {
	origin, err := n.cfg.PublicOrigin()
	if err != nil {
		n.log.Warn("remote MCP endpoint off ("+mcp.Path+" answers 503)", "reason", err.Error())
		api.Page(fiber.MethodPost, mcp.Path, func(*fiber.Ctx) error {
			return apierror.Unavailable("the MCP endpoint is off on this node: %s", err)
		})
		return nil
	}
	r, err := mcp.NewRemote(mcp.RemoteConfig{Origin: origin, API: &inprocess.Transport{Handler: api.InProcess()},
		ClientIP: n.resolver.ClientIP, Logger: n.log.With("part", "mcp"), Registerer: n.reg})
	if err != nil {
		return err
	}
	api.Page(fiber.MethodPost, mcp.Path, r.Handler())
	n.log.Info("remote MCP endpoint", "url", origin.URL(mcp.Path), "tools", len(mcp.ToolNames()), "premium", len(mcp.PremiumTools))
	return nil
}
