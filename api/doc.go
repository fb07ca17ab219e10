// Package api embeds openapi.yaml, the contract users read, and serves it
// as JSON (GET /api/v1/openapi.json). Tests validate every response they
// receive against this document.
package api
