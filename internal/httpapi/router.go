package httpapi

import "github.com/gofiber/fiber/v2"

// Prefix is the path prefix of every API route.
const Prefix = "/api/v1"

// Router is how a feature adds its routes to a node: every feature has a
// Routes(r Router) method, called once while the node is wired, before it
// serves. *app.API is the Router of a node.
type Router interface {
	// Route adds a route under Prefix.
	Route(method, path string, handlers ...fiber.Handler)
	// Page adds a route outside Prefix (documents at the origin's root)
	// that the API's middleware (request ids, limits, metrics) applies to.
	Page(method, path string, handlers ...fiber.Handler)
	// Static adds a route outside Prefix that is not an API call (the web
	// application's page and files): the per-IP request limit does not
	// apply to it.
	Static(method, path string, handlers ...fiber.Handler)
}

// Route is a route given whole, to be added ahead of the API's middleware
// (app.Deps.Unlimited: the transparency log's tiles at the log's origin).
type Route struct {
	Method   string
	Path     string
	Handlers []fiber.Handler
}
