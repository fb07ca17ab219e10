// Package app provides the public HTTP API on Fiber: the /api/v1 routes,
// the mapping of errors to the envelope, request ids, access logs, HTTP
// metrics and the health report. Feature packages add their routes through
// the httpapi.Router that API satisfies, and parse parameters, read bodies
// and answer JSON with package httpapi's helpers, as app's own routes do,
// so every route answers bad input the same way. Only the node's wiring
// (internal/node) imports this package.
//
// Invariant: every non-2xx answer, from any route, unknown routes and
// methods and recovered panics included, is the error envelope.
package app
