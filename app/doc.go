// Package app is the public HTTP API of attestd on Fiber: the /api/v1
// routes of SPEC.md and CONTRACT.md, strict parameter parsing, the error
// envelope on every non-2xx answer (unknown routes and methods and
// recovered panics included), request ids, access logs, Prometheus
// metrics and the health report. Reads go through the cache to the store.
package app
