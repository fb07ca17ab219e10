// Package apptest starts real API nodes for tests, each over its own
// PostgreSQL database and Redis key prefix (from testenv), optionally
// seeded. Its HTTP client validates every response against the OpenAPI
// document, so every test that reaches a route also checks the contract.
package apptest
