// Package app provides the public HTTP API on Fiber: the /api/v1 routes,
// strict parameter parsing, the mapping of errors to the envelope, request
// ids, access logs, HTTP metrics and the health report. Feature packages add
// their routes through API.Route and parse parameters with the exported
// parsers, so every route answers bad input the same way.
//
// Invariant: every non-2xx answer, from any route, unknown routes and
// methods and recovered panics included, is the error envelope.
package app
