// Package mcp is attestd's Model Context Protocol tool server: nine
// read-only tools over the attestd REST API, built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and calling the API through
// package client.
//
// Tools: get_stats, list_attestations, get_attestation, get_agent,
// get_agent_stats, verify_action_hash, and the premium get_full_history,
// get_forensic_report and bulk_verify. Inputs are typed, with their JSON
// Schema (descriptions, ranges, the action-type enum, date formats) inferred
// from Go types and refined here; every answer carries structured output and
// a short readable text.
//
// Configuration (ConfigFromEnv): ATTESTD_API_URL (the service, default
// http://127.0.0.1:8080), ATTESTD_API_KEY (enables the premium tools; without
// it they answer how to get a key and make no request), ATTESTD_API_TIMEOUT
// (per API call, default 15s).
//
// API errors (400, 401, 402, 404, 429, 5xx) and unreachable APIs are tool
// errors (a result with isError set) carrying the API's message, and the
// retry delay for 429, so a model can read and react to them; only broken
// protocol use is a protocol error.
//
// Transports: Server.ServeStdio (newline-delimited JSON on stdin/stdout; the
// process must log on stderr only) and Server.ServeHTTP (stateless
// streamable HTTP with JSON responses, for `attestd mcp --http ADDR`).
package mcp
