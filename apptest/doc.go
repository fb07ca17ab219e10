// Package apptest starts real attestd API nodes for tests: each node is the
// full app on a free 127.0.0.1 port over a real Postgres database and a real
// Redis key prefix (from testenv), optionally seeded. Its HTTP client
// validates every response it receives against api/openapi.yaml with
// kin-openapi, so a test that reaches a route also checks the contract.
package apptest
