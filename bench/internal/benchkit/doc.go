// Package benchkit holds what the programs under bench/ share: their own
// PostgreSQL database and Redis (OpenStores), starting a server binary
// until it is ready, the machine's load average, latency
// percentiles, and waiting for webhooks' endpoint verification.
package benchkit
