// Package httpapi holds the conventions every route of the API shares, so
// that the public API (package app) and the features that add routes to it
// (keys, premium, webhooks, the transparency log, the stream, the web
// application, x402) answer the same way without importing one another:
//
//   - Router, the one way a feature adds its routes to a node, and Prefix;
//   - strict query parsing (QueryParams, ParseLimit, ParseOffset,
//     ParseRange, cursors, addresses, action types and hashes, signatures),
//     every bad value a 400 in the envelope;
//   - request bodies (Body: bounded, one content coding) and their media
//     type (RequireJSON);
//   - JSON answers (Marshal, SendJSON, SendValue) and gzip negotiation
//     (AcceptsGzip);
//   - the mapping of store errors to answers (StoreError, LoadError);
//   - Retry-After parsing (ParseRetryAfter), for the clients of other
//     servers.
package httpapi
